#pragma once
// Where a change happened: the profiles of one workload's points (trace/profile.hpp),
// compared between the arms. Pure.
//
// A profiling pass times the same kind of ops as a measured round, with the profiler on. Its extra
// time over the point's rounds, divided by the calls it counted, is the profiler's cost per
// traced call (about 410 guest instructions under -icount). Part of it falls inside the call
// (the cheapest function's own time per call bounds it: about 205), the rest in the caller's
// own time. Each function's own time per op is shown less the part inside its calls (so a
// caller still carries the rest for each profiled function it calls); sums over functions
// take out the whole cost of their calls, which makes them comparable with the rounds'
// measured change. Calls per op are exact. The comparison keeps the functions whose own
// time per op changed most, and says how much of the measured change the functions whose
// calls per op changed account for.
#include <optional>
#include <string>
#include <vector>

#include "evidence/bundle.hpp"

namespace ks::analysis {

// At most this many functions in a comparison.
inline constexpr size_t kProfileFunctions = 10;
// A function's calls per op changed when they moved by at least this much (and 2%).
inline constexpr double kCallsChanged = 0.05;

// Absent unless both arms have at least one ok point with a timed profile of WORKLOAD.
// CHANGED: the workload's verdict is a change (REGRESSION or IMPROVEMENT); only then is
// there a measured change for the functions to account for (calls_changed_share_pct).
std::optional<evidence::ProfileComparison> compare_profiles(const std::vector<evidence::Point>& points,
                                                            const std::vector<evidence::Row>& rows,
                                                            const std::string& workload,
                                                            const std::string& control_arm,
                                                            const std::string& patched_arm, bool changed);

}  // namespace ks::analysis

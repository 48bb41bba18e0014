#pragma once
// The gates the analysis itself checks (kinds, names and reach: analysis/gate_kind.hpp).
// A failed gate makes INVALID what it touches, and nothing else: the numbers may still be
// printed, but they are not evidence. Drift is no gate (analysis/verdict.hpp).
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/analyze.hpp"
#include "evidence/bundle.hpp"

namespace ks::analysis {

// One failed point_failed gate per failed point (scope "point <id>"), or one passed gate
// when none failed. A failed point invalidates nothing by itself (gate_kind.hpp).
std::vector<evidence::Gate> point_gates(const std::vector<evidence::Point>& points);

// "patched failed k of n points" (scope "experiment": every workload INVALID) when a point of
// PATCHED_ARM failed, else a passed gate. A failed control point stays a dropped block: the
// control kernel is the known one, its failure the machine's.
evidence::Gate patched_failure_gate(const std::vector<evidence::Point>& points, const std::string& patched_arm);

// Every row's result as expected (unexpected_results == 0, expected_match_ratio == 100)
// and no round failed. Reads the workload's tallies.
evidence::Gate semantic_gate(const evidence::WorkloadAnalysis& w);

// Both arms measured; in a confirm run, at least one whole block (w.block_ratios). Nothing
// while points are still pending (an unfinished run is not an invalid one).
std::optional<evidence::Gate> data_gate(const evidence::WorkloadAnalysis& w,
                                        const Options& options, bool run_complete);

// Which workloads ran (have rows) in each point.
using WorkloadsAtPoint = std::map<int, std::set<std::string>>;
WorkloadsAtPoint workloads_at_points(const std::vector<evidence::Row>& rows);

// Whether a failed gate makes this workload INVALID: its kind invalidates (point_failed
// does not), and its scope is the workload, or "point N" where the workload ran (every
// workload when none has rows there), or not a workload of the experiment at all (the
// machine, the builds, the experiment). Without `ran`, "point N" touches every workload.
bool gate_concerns(const evidence::Gate& gate, const std::string& workload,
                   const std::vector<WorkloadSpec>& workloads,
                   const WorkloadsAtPoint* ran = nullptr);

}  // namespace ks::analysis

#pragma once
// The gates the analysis itself checks. A failed gate makes a verdict INVALID: the numbers
// may still be printed, but they are not evidence.
#include <optional>
#include <string>
#include <vector>

#include "analysis/analyze.hpp"
#include "evidence/bundle.hpp"

namespace ks::analysis {

// One failed gate per failed point (scope "point <id>"), or one passed gate when none failed.
std::vector<evidence::Gate> point_gates(const std::vector<evidence::Point>& points);

// Every row's result as expected (unexpected_results == 0, expected_match_ratio == 100)
// and no round failed. Reads the workload's tallies.
evidence::Gate semantic_gate(const evidence::WorkloadAnalysis& w);

// Both arms measured. Nothing while points are still pending (an unfinished run is not
// an invalid one).
std::optional<evidence::Gate> data_gate(const evidence::WorkloadAnalysis& w,
                                        const Options& options, bool run_complete);

// Screen scheme only: the two control points must agree. Nothing for confirm (randomised
// blocks make drift part of the between-point noise) or while points are pending.
std::optional<evidence::Gate> drift_gate(const evidence::WorkloadAnalysis& w,
                                         const Options& options, bool run_complete);

// Whether a gate bears on this workload: its scope is the workload, or it is not scoped to
// any workload of the experiment (a point, the machine, the experiment).
bool gate_concerns(const evidence::Gate& gate, const std::string& workload,
                   const std::vector<WorkloadSpec>& workloads);

}  // namespace ks::analysis

#pragma once
// The 000_* sandwich table: control A, patched, control B, the patched delta against the
// control midpoint, the control drift, and both again without each point's first round.
#include <optional>
#include <string>
#include <vector>

#include "analysis/samples.hpp"
#include "evidence/bundle.hpp"

namespace ks::analysis {

struct Sandwich {
  double control_a = 0, patched = 0, control_b = 0, control_midpoint = 0;
  double delta_pct = 0, drift_pct = 0;
};

// control_a / control_b: the first / last control point (by point id); patched: the mean of
// the patched point means. With one control point A == B and the drift is 0. `skip_first`
// uses each point's mean without its first round. Zero when an arm has no point.
Sandwich sandwich(const std::vector<evidence::PointSummary>& points, const std::string& control_arm,
                  const std::string& patched_arm, bool skip_first = false);

// Screen: copies both tables (all rounds, first round dropped) into the workload's fields.
void fill_sandwich(evidence::WorkloadAnalysis& w, const std::string& control_arm,
                   const std::string& patched_arm);

// Confirm and compare: a table over every point. control_a / control_b: the first and last
// control point means, and the drift between them (all rounds, first round dropped);
// patched and control_midpoint: the mean of each arm's point means. delta_pct is the
// verdict's estimate and is set by the caller.
void fill_arm_table(evidence::WorkloadAnalysis& w, const std::string& control_arm,
                    const std::string& patched_arm);

// The control arm's trend over the run: 100 (exp(b) - 1), b the least-squares slope of
// ln(control point's best round) on the block number. Nothing with fewer than two blocks.
std::optional<double> control_trend_pct_per_block(const std::vector<PointSample>& samples,
                                                  const std::string& control_arm,
                                                  bool higher_is_better);

}  // namespace ks::analysis

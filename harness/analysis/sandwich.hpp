#pragma once
// The 000_* sandwich table: control A, patched, control B, the patched delta against the
// control midpoint, the control drift, and both again without each point's first round.
#include <string>
#include <vector>

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

// Copies both tables (all rounds, first round dropped) into the workload's fields.
void fill_sandwich(evidence::WorkloadAnalysis& w, const std::string& control_arm,
                   const std::string& patched_arm);

}  // namespace ks::analysis

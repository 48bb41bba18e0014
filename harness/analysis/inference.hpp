#pragma once
// The estimators of statistics.md for one workload, and Holm's correction across workloads.
//
// The verdict reads the decision of analysis/decision.hpp: confirm, t on the block log
// ratios of the points' best rounds; screen and compare, t on the ln best rounds of the two arms.
// Everything else here is description: the hierarchical bootstrap (too narrow with few
// points: on A/A screens its 95% interval excluded 1 in 24-39% of runs), Hodges-Lehmann
// and Mann-Whitney on the points' best rounds, and the variance components.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "analysis/analyze.hpp"
#include "analysis/decision.hpp"
#include "evidence/bundle.hpp"
#include "stats/bootstrap.hpp"

namespace ks::analysis {

// Fills bootstrap_ci (95%, descriptive), hodges_lehmann, mann_whitney_p (+ method), the
// variance components, and notes on what the design cannot show. `patched_best` and
// `control_best`: each point's best round (all > 0), the same points as the groups.
void fill_descriptive(evidence::WorkloadAnalysis& w, const stats::Groups& patched,
                      const stats::Groups& control, const std::vector<double>& patched_best,
                      const std::vector<double>& control_best, const Options& options,
                      uint64_t seed);

// Copies a decision into the workload: ratio_ci, ratio_ci90, t_test_p, degrees_of_freedom,
// sd_log_ratio, mde_pct, mde_basis, blocks_needed, and its notes.
void fill_decision(evidence::WorkloadAnalysis& w, const Decision& d);

// One workload's decision at a given two-sided alpha (decide_paired or decide_unpaired
// bound to its data). Empty when the workload has nothing to decide on.
using Judge = std::function<Decision(double alpha)>;

struct Judged {
  std::optional<Decision> decision;  // at the workload's Holm level
  bool significant = false;          // a change, and Holm's step-down reached it
};

// Holm across the workloads of one experiment, read through the intervals: the workloads
// whose decision has a p are ordered by it (ascending); the one of rank i is judged again at
// alpha/(m - i); stepping down, a workload is a significant change only if its interval
// excludes 1.0 and every workload before it did too (Holm stops at the first
// non-rejection). For a t interval "excludes 1.0 at level 1 - a" is "p < a", so this is
// Holm's procedure exactly, and p_holm < alpha says the same. Sets p_holm and a note on
// the level; the interval90 (equivalence) needs no adjustment: NO_CHANGE needs every
// workload equivalent, an intersection-union claim. step_down false: the judges already
// split alpha over the workloads (a confirm run's sequential design, which also splits the
// equivalence level), so each is asked once and nothing is stepped down.
std::vector<Judged> apply_holm(std::vector<evidence::WorkloadAnalysis>& workloads,
                               const std::vector<Judge>& judges, double alpha = 0.05,
                               bool step_down = true);

}  // namespace ks::analysis

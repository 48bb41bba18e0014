#pragma once
// The estimators of statistics.md for one workload, and Holm's correction across workloads.
//
// The verdict reads Student's t on the logs of the point means (stats/log_ratio.hpp): the
// point is the independent unit. The hierarchical bootstrap that statistics.md proposes is
// still computed and stored (bootstrap_ci), but only as a description: with few points
// it is too narrow (see stats/log_ratio.hpp for the A/A figures).
#include <cstdint>
#include <optional>
#include <vector>

#include "analysis/analyze.hpp"
#include "evidence/bundle.hpp"
#include "stats/log_ratio.hpp"

namespace ks::analysis {

// Fills ratio_ci (95%), ratio_ci90, t_test_p, degrees_of_freedom, bootstrap_ci,
// hodges_lehmann, mann_whitney_p (+ method), the variance components, mde_pct and notes on
// what the design cannot show. Returns the t test for Holm and the verdict, or nothing when
// no interval exists (an arm without points, one point per arm, a mean <= 0).
std::optional<stats::LogRatioTest> fill_inference(evidence::WorkloadAnalysis& w,
                                                  const stats::Groups& patched,
                                                  const stats::Groups& control,
                                                  const Options& options, uint64_t seed);

// Holm across the workloads of one experiment, read through the intervals: workloads are
// ordered by their t-test p (ascending); the one of rank i gets its interval widened to
// level 1 - alpha/(m - i); stepping down, a workload is a significant change only if its
// widened interval excludes 1.0 and every workload before it did too (Holm stops at the
// first non-rejection). For a t interval "excludes 1.0 at level 1 - a" is "p < a", so this
// is Holm's procedure exactly, and p_holm < alpha says the same. ratio_ci is replaced by the
// widened interval (its level says which). ratio_ci90 (equivalence) is left alone: NO_CHANGE
// needs every workload equivalent, an intersection-union claim that needs no adjustment.
// Returns, per workload, whether it is a significant change.
std::vector<bool> apply_holm(std::vector<evidence::WorkloadAnalysis>& workloads,
                             const std::vector<std::optional<stats::LogRatioTest>>& tests,
                             double alpha = 0.05);

}  // namespace ks::analysis

#include "analysis/inference.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "stats/bootstrap.hpp"
#include "stats/holm.hpp"
#include "stats/power.hpp"
#include "stats/rank_tests.hpp"
#include "stats/summary.hpp"
#include "stats/variance.hpp"

namespace ks::analysis {
namespace {

evidence::Interval to_interval(const stats::Ratio& r) { return {r.estimate, r.low, r.high, r.level}; }

std::vector<double> point_means(const stats::Groups& arm) {
  std::vector<double> means;
  for (auto& rounds : arm) means.push_back(stats::mean(rounds));
  return means;
}

std::vector<double> logs(const std::vector<double>& xs) {
  std::vector<double> out;
  for (double x : xs) out.push_back(std::log(x));
  return out;
}

bool all_positive(const std::vector<double>& xs) {
  return std::all_of(xs.begin(), xs.end(), [](double x) { return x > 0; });
}

// Smallest two-sided Mann-Whitney p any data could give with these many point means.
double smallest_possible_p(std::size_t m, std::size_t n) {
  double arrangements = 1;  // C(m + n, m)
  for (std::size_t i = 1; i <= m; ++i) arrangements = arrangements * static_cast<double>(n + i) / i;
  return std::min(1.0, 2 / arrangements);
}

void fill_rank_estimates(evidence::WorkloadAnalysis& w, const std::vector<double>& p_means,
                         const std::vector<double>& c_means) {
  const auto hl = stats::hodges_lehmann(logs(p_means), logs(c_means), 0.95);
  w.hodges_lehmann = evidence::Interval{std::exp(hl.estimate), std::exp(hl.low),
                                        std::exp(hl.high), hl.level};
  const auto mw = stats::mann_whitney_u(p_means, c_means);
  w.mann_whitney_p = mw.p;
  w.mann_whitney_method = stats::to_string(mw.method);
}

void note_design_limits(evidence::WorkloadAnalysis& w, std::size_t patched_points,
                        std::size_t control_points) {
  if (patched_points + control_points < 3)
    w.notes.push_back("one point per arm: the boot-to-boot noise is not measured, so there is "
                      "no interval; run more points");
  else if (patched_points < 2 || control_points < 2)
    w.notes.push_back(fmt::format(
        "{} patched and {} control point(s): the interval rests on {} degree(s) of freedom of "
        "boot-to-boot noise, assumed equal in both arms; the confirm scheme gives a firmer claim",
        patched_points, control_points, patched_points + control_points - 2));
  if (patched_points < 2)
    w.notes.push_back("the bootstrap interval cannot see the boot-to-boot noise of an arm with "
                      "one point and is narrower than the evidence allows");
  const double floor_p = smallest_possible_p(patched_points, control_points);
  if (floor_p >= 0.05)
    w.notes.push_back(fmt::format(
        "Mann-Whitney on {} vs {} point means cannot reach p < 0.05 (smallest possible p {:.3g})",
        patched_points, control_points, floor_p));
  if (w.hodges_lehmann && w.hodges_lehmann->level < 0.95 - 1e-9)
    w.notes.push_back(fmt::format(
        "the Hodges-Lehmann interval reaches only {:.0f}% confidence with so few points",
        100 * w.hodges_lehmann->level));
}

}  // namespace

std::optional<stats::LogRatioTest> fill_inference(evidence::WorkloadAnalysis& w,
                                                  const stats::Groups& patched,
                                                  const stats::Groups& control,
                                                  const Options& options, uint64_t seed) {
  if (patched.empty() || control.empty()) return std::nullopt;
  const auto p_means = point_means(patched), c_means = point_means(control);
  if (!all_positive(p_means) || !all_positive(c_means)) {
    w.notes.push_back("a point mean is not positive: no ratio can be estimated");
    return std::nullopt;
  }

  const auto vc = stats::variance_components({patched, control});
  w.within_point_sd_pct = vc.within_sd_pct();
  w.between_point_sd_pct = vc.between_sd_pct();
  w.bootstrap_ci = to_interval(
      stats::bootstrap_ratio(patched, control, options.bootstrap_resamples, seed).interval(0.95));
  fill_rank_estimates(w, p_means, c_means);

  const auto test = stats::log_ratio_t(p_means, c_means);
  if (test) {
    w.ratio_ci = to_interval(test->interval(0.95));
    w.ratio_ci90 = to_interval(test->interval(0.90));
    w.t_test_p = test->p_value();
    w.degrees_of_freedom = test->df;
    w.mde_pct = stats::mde_pct(test->se_log, test->df);
    // Kept by the verdict only when INCONCLUSIVE.
    const int blocks_run = static_cast<int>(std::min(patched.size(), control.size()));
    w.blocks_needed = stats::blocks_needed(test->sd_log, options.material_pct, blocks_run);
  }
  note_design_limits(w, patched.size(), control.size());
  return test;
}

std::vector<bool> apply_holm(std::vector<evidence::WorkloadAnalysis>& workloads,
                             const std::vector<std::optional<stats::LogRatioTest>>& tests,
                             double alpha) {
  std::vector<std::size_t> tested;
  std::vector<double> p;
  for (std::size_t i = 0; i < tests.size(); ++i)
    if (tests[i]) {
      tested.push_back(i);
      p.push_back(tests[i]->p_value());
    }

  std::vector<bool> significant(workloads.size(), false);
  const auto levels = stats::holm_levels(p, alpha);
  const auto adjusted = stats::holm_adjust(p);
  bool still_rejecting = true;
  for (std::size_t rank : stats::holm_order(p)) {
    const std::size_t i = tested[rank];
    auto& w = workloads[i];
    w.p_holm = adjusted[rank];
    w.ratio_ci = to_interval(tests[i]->interval(1 - levels[rank]));
    const bool excludes_one = w.ratio_ci->low > 1.0 || w.ratio_ci->high < 1.0;
    significant[i] = still_rejecting && excludes_one;
    if (!excludes_one) still_rejecting = false;
    if (tested.size() > 1)
      w.notes.push_back(fmt::format("ratio interval at {:.4g}% (Holm's step-down over {} workloads)",
                                    100 * w.ratio_ci->level, tested.size()));
    if (excludes_one && !significant[i])
      w.notes.push_back("the interval excludes 1.0, but Holm's step-down stopped at a workload "
                        "with stronger evidence whose interval did not");
  }
  return significant;
}

}  // namespace ks::analysis

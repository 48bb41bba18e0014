#include "analysis/inference.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "stats/summary.hpp"
#include "stats/holm.hpp"
#include "stats/rank_tests.hpp"
#include "stats/variance.hpp"

namespace ks::analysis {
namespace {

evidence::Interval to_interval(const stats::Ratio& r) { return {r.estimate, r.low, r.high, r.level}; }

// Smallest two-sided Mann-Whitney p any data could give with these many points.
double smallest_possible_p(std::size_t m, std::size_t n) {
  double arrangements = 1;  // C(m + n, m)
  for (std::size_t i = 1; i <= m; ++i) arrangements = arrangements * static_cast<double>(n + i) / i;
  return std::min(1.0, 2 / arrangements);
}

void note_design_limits(evidence::WorkloadAnalysis& w, std::size_t patched_points,
                        std::size_t control_points) {
  if (patched_points < 2)
    w.notes.push_back("the bootstrap interval (descriptive) cannot see the boot-to-boot noise "
                      "of an arm with one point and is narrower than the evidence allows");
  const double floor_p = smallest_possible_p(patched_points, control_points);
  if (floor_p >= 0.05)
    w.notes.push_back(fmt::format(
        "Mann-Whitney on {} vs {} points (their best rounds) cannot reach p < 0.05 (smallest possible p "
        "{:.3g})",
        patched_points, control_points, floor_p));
  if (w.hodges_lehmann && w.hodges_lehmann->level < 0.95 - 1e-9)
    w.notes.push_back(fmt::format(
        "the Hodges-Lehmann interval reaches only {:.0f}% confidence with so few points",
        100 * w.hodges_lehmann->level));
}

}  // namespace

void fill_descriptive(evidence::WorkloadAnalysis& w, const stats::Groups& patched,
                      const stats::Groups& control, const std::vector<double>& patched_best,
                      const std::vector<double>& control_best, const Options& options,
                      uint64_t seed) {
  if (patched.empty() || control.empty()) return;
  const auto vc = stats::variance_components({patched, control});
  w.within_point_sd_pct = vc.within_sd_pct();
  w.between_point_sd_pct = vc.between_sd_pct();
  w.bootstrap_ci = to_interval(
      stats::bootstrap_ratio(patched, control, options.bootstrap_resamples, seed).interval(0.95));
  const auto hl = stats::hodges_lehmann(stats::logs(patched_best), stats::logs(control_best), 0.95);
  w.hodges_lehmann = evidence::Interval{std::exp(hl.estimate), std::exp(hl.low),
                                        std::exp(hl.high), hl.level};
  const auto mw = stats::mann_whitney_u(patched_best, control_best);
  w.mann_whitney_p = mw.p;
  w.mann_whitney_method = stats::to_string(mw.method);
  note_design_limits(w, patched.size(), control.size());
}

void fill_decision(evidence::WorkloadAnalysis& w, const Decision& d) {
  w.ratio_ci = d.interval;
  w.ratio_ci90 = d.interval90;
  if (d.adjusted_log) w.adjusted_ratio = std::exp(*d.adjusted_log);
  w.t_test_p = d.p;
  w.degrees_of_freedom = d.df;
  w.sd_log_ratio = d.sd_log_ratio;
  w.mde_pct = d.mde_pct;
  w.mde_basis = d.mde_basis;
  w.blocks_needed = d.blocks_needed;
  w.notes.insert(w.notes.end(), d.notes.begin(), d.notes.end());
}

std::vector<Judged> apply_holm(std::vector<evidence::WorkloadAnalysis>& workloads,
                               const std::vector<Judge>& judges, double alpha, bool step_down) {
  std::vector<Judged> out(judges.size());
  if (!step_down) {  // each judge splits alpha itself (the sequential design's Bonferroni)
    for (std::size_t i = 0; i < judges.size(); ++i)
      if (judges[i]) {
        out[i].decision = judges[i](alpha);
        out[i].significant = out[i].decision->claim == Claim::change;
      }
    return out;
  }
  std::vector<std::size_t> tested;
  std::vector<double> p;
  for (std::size_t i = 0; i < judges.size(); ++i) {
    if (!judges[i]) continue;
    out[i].decision = judges[i](alpha);
    if (out[i].decision->p) {
      tested.push_back(i);
      p.push_back(*out[i].decision->p);
    }
  }

  const auto levels = stats::holm_levels(p, alpha);
  const auto adjusted = stats::holm_adjust(p);
  bool still_rejecting = true;
  for (std::size_t rank : stats::holm_order(p)) {
    const std::size_t i = tested[rank];
    auto& w = workloads[i];
    if (tested.size() > 1) out[i].decision = judges[i](levels[rank]);
    const auto& d = *out[i].decision;
    w.p_holm = adjusted[rank];
    const bool excludes_one = d.claim == Claim::change;
    out[i].significant = still_rejecting && excludes_one;
    if (!excludes_one) still_rejecting = false;
    if (tested.size() > 1 && d.interval)
      w.notes.push_back(fmt::format("ratio interval at {:.4g}% (Holm's step-down over {} workloads)",
                                    100 * d.interval->level, tested.size()));
    if (excludes_one && !out[i].significant)
      w.notes.push_back("the interval excludes 1.0, but Holm's step-down stopped at a workload "
                        "with stronger evidence whose interval did not");
  }
  return out;
}

}  // namespace ks::analysis

#include "analysis/sandwich.hpp"

#include <cmath>
#include <set>

#include "stats/summary.hpp"

namespace ks::analysis {
namespace {

// A percent change that a broken workload (a mean of 0) cannot turn into inf/NaN, which
// JSON cannot carry; the gates report such a workload.
double safe_pct(double from, double to) { return from != 0 ? stats::pct_change(from, to) : 0; }

}  // namespace

Sandwich sandwich(const std::vector<evidence::PointSummary>& points, const std::string& control_arm,
                  const std::string& patched_arm, bool skip_first) {
  std::vector<double> control, patched;
  for (auto& p : points) {
    const double value = skip_first ? p.mean_skip_first : p.mean;
    if (p.arm == control_arm) control.push_back(value);
    if (p.arm == patched_arm) patched.push_back(value);
  }
  Sandwich s;
  if (control.empty() || patched.empty()) return s;
  s.control_a = control.front();
  s.control_b = control.back();
  s.patched = stats::mean(patched);
  s.control_midpoint = (s.control_a + s.control_b) / 2;
  s.delta_pct = safe_pct(s.control_midpoint, s.patched);
  s.drift_pct = safe_pct(s.control_a, s.control_b);
  return s;
}

void fill_sandwich(evidence::WorkloadAnalysis& w, const std::string& control_arm,
                   const std::string& patched_arm) {
  const auto all = sandwich(w.points, control_arm, patched_arm);
  const auto skipped = sandwich(w.points, control_arm, patched_arm, true);
  w.control_a = all.control_a;
  w.patched = all.patched;
  w.control_b = all.control_b;
  w.control_midpoint = all.control_midpoint;
  w.delta_pct = all.delta_pct;
  w.drift_pct = all.drift_pct;
  w.delta_pct_skip_first = skipped.delta_pct;
  w.drift_pct_skip_first = skipped.drift_pct;
}

void fill_arm_table(evidence::WorkloadAnalysis& w, const std::string& control_arm,
                    const std::string& patched_arm) {
  std::vector<double> control, patched, control_skip;
  for (auto& p : w.points) {
    if (p.arm == control_arm) {
      control.push_back(p.mean);
      control_skip.push_back(p.mean_skip_first);
    }
    if (p.arm == patched_arm) patched.push_back(p.mean);
  }
  if (control.empty() || patched.empty()) return;
  w.control_a = control.front();
  w.control_b = control.back();
  w.patched = stats::mean(patched);
  w.control_midpoint = stats::mean(control);
  w.drift_pct = safe_pct(w.control_a, w.control_b);
  w.drift_pct_skip_first = safe_pct(control_skip.front(), control_skip.back());
}

std::optional<double> control_trend_pct_per_block(const std::vector<PointSample>& samples,
                                                  const std::string& control_arm,
                                                  bool higher_is_better) {
  std::vector<double> x, y;
  std::set<int> blocks;
  for (auto& s : samples) {
    if (s.arm != control_arm) continue;
    const double best = point_best(s, higher_is_better);
    if (!(best > 0)) return std::nullopt;
    x.push_back(s.block);
    y.push_back(std::log(best));
    blocks.insert(s.block);
  }
  if (blocks.size() < 2) return std::nullopt;
  const double mx = stats::mean(x), my = stats::mean(y);
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
  }
  return 100 * (std::exp(sxy / sxx) - 1);
}

}  // namespace ks::analysis

#include "analysis/samples.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <span>

#include "agent/clock.hpp"
#include "stats/summary.hpp"

namespace ks::analysis {
namespace {

bool measured(const evidence::Row& r) { return !r.warmup && r.error.empty(); }

std::optional<double> canary_ns(const evidence::Row& r) {
  if (!r.extra.is_object()) return std::nullopt;
  auto it = r.extra.find("canary_ns");
  if (it == r.extra.end() || !it->is_number() || it->get<double>() <= 0) return std::nullopt;
  return it->get<double>();
}

// The agent timed the round with two clocks and they disagreed: the time is not trusted, and
// the round did not fail otherwise. Decided by the round's own two figures under the agent's
// rule, its only error being the agent's words for them, never by its "agree" (thirty-ninth
// attack: "agree": false on a round that failed with EIO hid the failure).
bool clocks_disagreed(const evidence::Row& r) {
  if (!r.extra.is_object()) return false;
  auto clock = r.extra.find("clock");
  if (clock == r.extra.end() || !clock->is_object()) return false;
  auto check = clock->find("elapsed_check_ns");
  if (check == clock->end() || !check->is_number_integer()) return false;
  const agent::ClockSpan span(static_cast<int64_t>(r.elapsed_ns), check->get<int64_t>());
  return !agent::clocks_agree(span) && r.error == agent::clock_disagreement(span);
}

}  // namespace

std::vector<PointSample> measured_samples(const std::vector<evidence::Point>& points,
                                          const std::vector<evidence::Row>& rows,
                                          const std::string& workload, const std::string& metric) {
  std::map<int, const evidence::Point*> point_of;
  for (auto& p : points) point_of[p.id] = &p;
  std::map<int, std::vector<const evidence::Row*>> by_point;  // ordered by point id
  for (auto& r : rows) {
    auto it = point_of.find(r.point);
    if (it != point_of.end() && it->second->status == "failed") continue;
    if (r.workload == workload && measured(r) && r.metric(metric)) by_point[r.point].push_back(&r);
  }
  // The canary's usual time in each arm over the whole run: the reference a disturbed round
  // exceeds. Per arm, because a patch may change the canary's own speed (a scheduler, timer
  // or mitigation change): that is a finding (canary_shift), and must not make the patched
  // arm look disturbed.
  std::map<std::string, std::vector<double>> canaries;
  for (auto& [point, point_rows] : by_point)
    for (auto* r : point_rows)
      if (auto c = canary_ns(*r)) canaries[r->arm].push_back(*c);
  std::map<std::string, double> limit;
  for (auto& [arm, times] : canaries) limit[arm] = kDisturbedCanaryFactor * stats::median(times);
  auto disturbed = [&](const evidence::Row& r) {
    auto c = canary_ns(r);
    auto it = limit.find(r.arm);
    return c && it != limit.end() && *c > it->second;
  };

  std::vector<PointSample> out;
  for (auto& [point, point_rows] : by_point) {
    std::stable_sort(point_rows.begin(), point_rows.end(),
                     [](auto* a, auto* b) { return a->round < b->round; });
    auto it = point_of.find(point);
    const int block = it != point_of.end() ? it->second->block : point_rows.front()->block;
    PointSample s{point, block, point_rows.front()->arm, {}};
    const bool all_disturbed = std::all_of(point_rows.begin(), point_rows.end(), [&](auto* r) { return disturbed(*r); });
    for (auto* r : point_rows) {
      if (!all_disturbed && disturbed(*r)) {
        ++s.disturbed;
        continue;
      }
      s.values.push_back(*r->metric(metric));
    }
    double point_fastest = 0;
    for (auto* r : point_rows)
      if (auto c = canary_ns(*r)) point_fastest = point_fastest > 0 ? std::min(point_fastest, *c) : *c;
    s.fastest_canary_ns = point_fastest;
    out.push_back(std::move(s));
  }
  // Each arm's usual fastest canary: the median over its points of their fastest ones.
  std::map<std::string, std::vector<double>> timed;
  for (auto& s : out)
    if (s.fastest_canary_ns > 0) timed[s.arm].push_back(s.fastest_canary_ns);
  for (auto& s : out) {
    auto it = timed.find(s.arm);
    const double usual = it == timed.end() ? 0 : stats::median(it->second);
    s.canary_factor = usual > 0 && s.fastest_canary_ns > 0 ? s.fastest_canary_ns / usual : 0;
    const size_t rounds = s.values.size() + static_cast<size_t>(s.disturbed);
    s.disturbed_throughout = rounds >= kDisturbedPointMinRounds && s.canary_factor > kDisturbedPointFactor;
  }
  return out;
}

std::optional<double> canary_shift(const std::vector<PointSample>& samples, const std::string& control_arm,
                                   const std::string& patched_arm) {
  auto fastest = [&](const std::string& arm) {
    std::vector<double> v;
    for (auto& s : samples)
      if (s.arm == arm && s.fastest_canary_ns > 0) v.push_back(s.fastest_canary_ns);
    std::sort(v.begin(), v.end());
    return v;
  };
  const auto control = fastest(control_arm), patched = fastest(patched_arm);
  if (control.size() < kCanaryShiftMinPoints || patched.size() < kCanaryShiftMinPoints) return std::nullopt;
  // The arms apart: every point of one arm beyond every point of the other.
  if (!(patched.front() > control.back() || patched.back() < control.front())) return std::nullopt;
  const double shift = stats::median(patched) / stats::median(control);
  if (shift <= kCanaryShiftNote && shift >= 1 / kCanaryShiftNote) return std::nullopt;
  return shift;
}

RowTally tally_rows(const std::vector<evidence::Row>& rows, const std::string& workload,
                    const std::string& metric) {
  RowTally t;
  for (auto& r : rows) {
    if (r.workload != workload) continue;
    if (!r.warmup) ++t.rows;
    // Saturating: a sum that wrapped to 0 passed the gate (fortieth attack).
    t.unexpected_results += std::min(r.unexpected_results, UINT64_MAX - t.unexpected_results);
    t.min_expected_match_ratio = std::min(t.min_expected_match_ratio, r.expected_match_ratio);
    if (clocks_disagreed(r))
      ++t.clock_rounds;
    else if (!r.error.empty() || (!r.warmup && !r.metric(metric)))
      ++t.failed_rounds;
  }
  return t;
}

evidence::PointSummary summarize_point(const PointSample& sample) {
  const auto s = stats::summarize(sample.values);
  return {sample.point, sample.arm, s.n,      s.mean, s.min,
          s.max,        s.stddev,   s.mean_skip_first, s.median};
}

double point_best(const PointSample& sample, bool higher_is_better, bool skip_first) {
  std::span<const double> v(sample.values);
  if (skip_first && v.size() > 1) v = v.subspan(1);
  if (v.empty()) return 0;
  return higher_is_better ? *std::max_element(v.begin(), v.end()) : *std::min_element(v.begin(), v.end());
}

}  // namespace ks::analysis

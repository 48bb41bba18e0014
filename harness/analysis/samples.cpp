#include "analysis/samples.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <span>

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

// The agent timed the round with two clocks and they disagreed: the time is not trusted.
bool clocks_disagreed(const evidence::Row& r) {
  if (!r.extra.is_object()) return false;
  auto clock = r.extra.find("clock");
  if (clock == r.extra.end() || !clock->is_object()) return false;
  auto agree = clock->find("agree");
  return agree != clock->end() && agree->is_boolean() && !agree->get<bool>();
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
  // The canary's usual time over the whole run: the reference a disturbed round exceeds.
  std::vector<double> canaries;
  for (auto& [point, point_rows] : by_point)
    for (auto* r : point_rows)
      if (auto c = canary_ns(*r)) canaries.push_back(*c);
  const double limit = canaries.empty() ? 0 : kDisturbedCanaryFactor * stats::median(canaries);
  auto disturbed = [&](const evidence::Row& r) {
    auto c = canary_ns(r);
    return limit > 0 && c && *c > limit;
  };

  std::vector<PointSample> out;
  std::vector<double> fastest;  // each point's fastest canary, 0 when none was timed
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
    fastest.push_back(point_fastest);
    out.push_back(std::move(s));
  }
  // The run's usual fastest canary: the median over its points of their fastest ones.
  std::vector<double> timed;
  std::copy_if(fastest.begin(), fastest.end(), std::back_inserter(timed), [](double c) { return c > 0; });
  const double usual = timed.empty() ? 0 : stats::median(timed);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].canary_factor = usual > 0 && fastest[i] > 0 ? fastest[i] / usual : 0;
    const size_t rounds = out[i].values.size() + static_cast<size_t>(out[i].disturbed);
    out[i].disturbed_throughout = rounds >= kDisturbedPointMinRounds && out[i].canary_factor > kDisturbedPointFactor;
  }
  return out;
}

RowTally tally_rows(const std::vector<evidence::Row>& rows, const std::string& workload,
                    const std::string& metric) {
  RowTally t;
  for (auto& r : rows) {
    if (r.workload != workload) continue;
    if (!r.warmup) ++t.rows;
    t.unexpected_results += r.unexpected_results;
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

#include "analysis/samples.hpp"

#include <algorithm>
#include <map>
#include <span>

#include "stats/summary.hpp"

namespace ks::analysis {
namespace {

bool measured(const evidence::Row& r) { return !r.warmup && r.error.empty(); }

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
  std::vector<PointSample> out;
  for (auto& [point, point_rows] : by_point) {
    std::stable_sort(point_rows.begin(), point_rows.end(),
                     [](auto* a, auto* b) { return a->round < b->round; });
    auto it = point_of.find(point);
    const int block = it != point_of.end() ? it->second->block : point_rows.front()->block;
    PointSample s{point, block, point_rows.front()->arm, {}};
    for (auto* r : point_rows) s.values.push_back(*r->metric(metric));
    out.push_back(std::move(s));
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
    if (!r.error.empty() || (!r.warmup && !r.metric(metric))) ++t.failed_rounds;
  }
  return t;
}

evidence::PointSummary summarize_point(const PointSample& sample) {
  const auto s = stats::summarize(sample.values);
  return {sample.point, sample.arm, s.n,      s.mean, s.min,
          s.max,        s.stddev,   s.mean_skip_first, s.median};
}

double point_median(const PointSample& sample, bool skip_first) {
  if (skip_first && sample.values.size() > 1)
    return stats::median(std::span(sample.values).subspan(1));
  return stats::median(sample.values);
}

stats::Groups arm_groups(const std::vector<PointSample>& samples, const std::string& arm) {
  stats::Groups groups;
  for (auto& s : samples)
    if (s.arm == arm) groups.push_back(s.values);
  return groups;
}

}  // namespace ks::analysis

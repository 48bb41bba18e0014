#include "analysis/blocks.hpp"

#include <cmath>
#include <fmt/format.h>
#include <map>

#include "stats/summary.hpp"

namespace ks::analysis {

Blocks paired_blocks(const std::vector<evidence::Point>& points,
                     const std::vector<PointSample>& samples, const std::string& control_arm,
                     const std::string& patched_arm, bool higher_is_better,
                     bool skip_first) {
  std::map<int, const PointSample*> sample_of;
  for (auto& s : samples) sample_of[s.point] = &s;
  std::map<int, std::vector<const evidence::Point*>> by_block;  // ascending block number
  for (auto& p : points)
    if (p.arm == control_arm || p.arm == patched_arm) by_block[p.block].push_back(&p);

  Blocks out;
  for (auto& [block, members] : by_block) {
    std::vector<std::string> failed;
    bool pending = false;
    for (auto* p : members) {
      if (p->status == "failed")
        failed.push_back(fmt::format("point {} ({}) failed{}", p->id, p->arm,
                                     p->failure.empty() ? "" : ": " + p->failure));
      else if (p->status != "ok")
        pending = true;
    }
    if (!failed.empty()) {
      out.dropped.push_back({block, fmt::format("{}", fmt::join(failed, "; "))});
      continue;
    }
    if (pending) continue;

    std::string why;
    double sum_log[2] = {0, 0}, sum_tail[2] = {0, 0};
    int count[2] = {0, 0};
    int first_point[2] = {-1, -1};
    double first_best[2] = {0, 0};
    for (auto* p : members) {
      const int arm = p->arm == patched_arm ? 1 : 0;
      auto it = sample_of.find(p->id);
      if (it == sample_of.end()) {
        why = fmt::format("no measured round in point {} ({})", p->id, p->arm);
        break;
      }
      if (it->second->disturbed_throughout) {
        why = fmt::format("point {} ({}) ran disturbed throughout: its fastest canary took {:.2f}x the "
                          "usual of its arm",
                          p->id, p->arm, it->second->canary_factor);
        break;
      }
      const double best = point_best(*it->second, higher_is_better, skip_first);
      if (!(best > 0)) {
        why = fmt::format("the best round of point {} ({}) is not positive", p->id, p->arm);
        break;
      }
      sum_log[arm] += std::log(best);
      sum_tail[arm] += std::fabs(std::log(stats::mean(it->second->values)) - std::log(best));
      if (count[arm]++ == 0) {
        first_point[arm] = p->id;
        first_best[arm] = best;
      }
    }
    if (why.empty() && count[0] == 0) why = fmt::format("no {} point", control_arm);
    if (why.empty() && count[1] == 0) why = fmt::format("no {} point", patched_arm);
    if (!why.empty()) {
      out.dropped.push_back({block, why});
      continue;
    }
    const double d = sum_log[1] / count[1] - sum_log[0] / count[0];
    out.ratios.push_back(
        {block, first_point[0], first_point[1], first_best[0], first_best[1], std::exp(d)});
    out.log_ratios.push_back(d);
    out.tail_shifts.push_back(sum_tail[1] / count[1] - sum_tail[0] / count[0]);
  }
  return out;
}

}  // namespace ks::analysis

#include "stats/change_points.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "stats/student_t.hpp"

namespace ks::stats {
namespace {

// Observations each side of a proposed split must have nearer its own mean than the other's.
constexpr size_t kSupport = 2;

struct Split {
  size_t at = 0;          // index into the whole series
  double q = -1;          // -1: the segment is too short to split
  size_t candidates = 0;  // splits considered (over every segment, for best_over)
};

// The best split of VALUES[begin, end) by the energy statistic with exponent 1:
//   E = 2/(a b) sum|x - y| - 1/C(a,2) sum|x - x'| - 1/C(b,2) sum|y - y'|,  Q = a b / (a + b) E
// for the a observations left of the split and the b right of it. Running sums make one
// scan O(m^2): moving one observation from the right side to the left adds its distances to
// the left ones and removes its distances to the right ones. A split is proposed only when
// each side has at least kSupport observations nearer its own mean than the other side's:
// one wild night beside an ordinary one is a disturbed night, not a new level.
Split best_split(const std::vector<double>& v, size_t begin, size_t end, size_t min_segment) {
  Split best;
  size_t m = end - begin;
  if (m < 2 * min_segment) return best;
  double total = 0, sum = 0;
  for (size_t i = begin; i < end; ++i) {
    sum += v[i];
    for (size_t j = i + 1; j < end; ++j) total += std::fabs(v[i] - v[j]);
  }
  double left = 0, right = total, left_sum = 0;
  for (size_t t = begin; t < end; ++t) {
    // Observation t moves to the left side; the split is then at t + 1.
    for (size_t i = begin; i < t; ++i) left += std::fabs(v[i] - v[t]);
    for (size_t j = t + 1; j < end; ++j) right -= std::fabs(v[t] - v[j]);
    left_sum += v[t];
    double a = static_cast<double>(t + 1 - begin), b = static_cast<double>(end - t - 1);
    if (a < min_segment || b < min_segment) continue;
    ++best.candidates;
    double cross = total - left - right;
    double e = 2 * cross / (a * b) - left / (a * (a - 1) / 2) - right / (b * (b - 1) / 2);
    double q = a * b / (a + b) * e;
    if (q <= best.q) continue;
    const double mean_left = left_sum / a, mean_right = (sum - left_sum) / b, mid = (mean_left + mean_right) / 2;
    size_t support_left = 0, support_right = 0;
    for (size_t i = begin; i < end; ++i) {
      const bool nearer_left = (v[i] - mid) * (mean_left - mid) > 0;
      if (i <= t && nearer_left) ++support_left;
      if (i > t && !nearer_left && v[i] != mid) ++support_right;
    }
    if (support_left < kSupport || support_right < kSupport) continue;
    best.at = t + 1;
    best.q = q;
  }
  return best;
}

// The best split over every segment between consecutive BOUNDS.
Split best_over(const std::vector<double>& v, const std::vector<size_t>& bounds, size_t min_segment) {
  Split best;
  size_t candidates = 0;
  for (size_t k = 0; k + 1 < bounds.size(); ++k) {
    Split s = best_split(v, bounds[k], bounds[k + 1], min_segment);
    candidates += s.candidates;
    if (s.q > best.q) best = s;
  }
  best.candidates = candidates;
  return best;
}

double mean_of(const std::vector<double>& v, size_t begin, size_t end) {
  return std::accumulate(v.begin() + begin, v.begin() + end, 0.0) / static_cast<double>(end - begin);
}

}  // namespace

double split_t_p(const std::vector<double>& v, size_t begin, size_t at, size_t end, size_t leave_out) {
  double na = 0, nb = 0, sa = 0, sb = 0;
  for (size_t i = begin; i < end; ++i) {
    if (i == leave_out) continue;
    (i < at ? na : nb) += 1;
    (i < at ? sa : sb) += v[i];
  }
  const double ma = sa / na, mb = sb / nb;
  double ss = 0;
  for (size_t i = begin; i < end; ++i) {
    if (i == leave_out) continue;
    const double d = v[i] - (i < at ? ma : mb);
    ss += d * d;
  }
  const double df = na + nb - 2, pooled = ss / df;
  if (!(pooled > 0)) return ma == mb ? 1.0 : 0.0;
  const double t = std::fabs(mb - ma) / std::sqrt(pooled * (1 / na + 1 / nb));
  return std::min(1.0, 2 * student_t_sf(t, df));
}

std::vector<ChangePoint> e_divisive_means(const std::vector<double>& series, const ChangePointOptions& o) {
  size_t min_segment = std::max<size_t>(o.min_segment, 2);  // a side needs a pair for its spread
  std::vector<size_t> bounds = {0, series.size()};
  std::vector<ChangePoint> found;
  while (true) {
    Split proposal = best_over(series, bounds, min_segment);
    if (proposal.q < 0) break;
    auto at = std::upper_bound(bounds.begin(), bounds.end(), proposal.at);
    size_t begin = *(at - 1), end = *at;
    const double before = mean_of(series, begin, proposal.at), after = mean_of(series, proposal.at, end);
    // The split's p with every night in and with its wildest night (farthest from its side's
    // mean) left out, whichever is larger: a change point must not rest on one night.
    size_t wildest = begin;
    auto residual = [&](size_t i) { return std::fabs(series[i] - (i < proposal.at ? before : after)); };
    for (size_t i = begin; i < end; ++i)
      if (residual(i) > residual(wildest)) wildest = i;
    const double p = std::min(1.0, std::max(split_t_p(series, begin, proposal.at, end),
                                            split_t_p(series, begin, proposal.at, end, wildest)) *
                                       static_cast<double>(proposal.candidates));
    if (p > o.alpha || std::fabs(after - before) < o.min_difference) break;
    found.push_back({proposal.at, p, proposal.q, before, after});
    bounds.insert(at, proposal.at);
  }
  std::sort(found.begin(), found.end(), [](auto& a, auto& b) { return a.index < b.index; });
  return found;
}

}  // namespace ks::stats

#include "stats/variance.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "stats/summary.hpp"

namespace ks::stats {

double VarianceComponents::within_sd_pct() const {
  return grand_mean != 0 ? 100 * std::sqrt(s1_sq) / grand_mean : 0;
}

double VarianceComponents::between_sd_pct() const {
  return grand_mean != 0 ? 100 * std::sqrt(t2_sq) / grand_mean : 0;
}

VarianceComponents variance_components(const std::vector<Groups>& arms) {
  VarianceComponents v;
  double within_sum = 0, rounds = 0, means_sum = 0, between_ss = 0;
  std::size_t within_points = 0, arms_with_points = 0;
  for (auto& arm : arms) {
    if (arm.empty()) continue;
    ++arms_with_points;
    std::vector<double> means;
    for (auto& point : arm) {
      if (point.empty()) throw std::invalid_argument("variance components: a point without rounds");
      means.push_back(mean(point));
      rounds += static_cast<double>(point.size());
      if (point.size() > 1) {
        const double sd = sample_stddev(point);
        within_sum += sd * sd;
        ++within_points;
      }
    }
    const double arm_mean = mean(means);
    for (double m : means) between_ss += (m - arm_mean) * (m - arm_mean);
    for (double m : means) means_sum += m;
    v.points += means.size();
  }
  if (v.points == 0) throw std::invalid_argument("variance components: no points");
  v.s1_sq = within_points ? within_sum / static_cast<double>(within_points) : 0;
  const std::size_t df = v.points - arms_with_points;
  v.s2_sq = df ? between_ss / static_cast<double>(df) : 0;
  v.rounds_per_point = rounds / static_cast<double>(v.points);
  v.t2_sq = std::max(0.0, v.s2_sq - v.s1_sq / v.rounds_per_point);
  v.grand_mean = means_sum / static_cast<double>(v.points);
  return v;
}

}  // namespace ks::stats

#include "stats/bootstrap.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "stats/random.hpp"
#include "stats/summary.hpp"

namespace ks::stats {
namespace {

void require_arm(const Groups& arm, const char* name) {
  if (arm.empty()) throw std::invalid_argument(std::string("bootstrap: no points in ") + name);
  for (auto& point : arm)
    if (point.empty())
      throw std::invalid_argument(std::string("bootstrap: a point without rounds in ") + name);
}

// One resample of one arm: draw points, then rounds within each drawn point.
double resample_arm(const Groups& arm, Xoshiro256& rng) {
  double sum_of_means = 0;
  for (std::size_t slot = 0; slot < arm.size(); ++slot) {
    const auto& rounds = arm[rng.below(arm.size())];
    double sum = 0;
    for (std::size_t i = 0; i < rounds.size(); ++i) sum += rounds[rng.below(rounds.size())];
    sum_of_means += sum / static_cast<double>(rounds.size());
  }
  return sum_of_means / static_cast<double>(arm.size());
}

}  // namespace

double mean_of_point_means(const Groups& arm) {
  std::vector<double> means;
  for (auto& point : arm) means.push_back(mean(point));
  return mean(means);
}

double percentile(std::span<const double> sorted, double q) {
  if (sorted.empty()) throw std::invalid_argument("percentile of an empty sample");
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  if (below + 1 >= sorted.size()) return sorted.back();
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + fraction * (sorted[below + 1] - sorted[below]);
}

Ratio RatioBootstrap::interval(double level) const {
  return {estimate, percentile(ratios, (1 - level) / 2), percentile(ratios, (1 + level) / 2),
          level};
}

double RatioBootstrap::se_log() const {
  std::vector<double> logs;
  logs.reserve(ratios.size());
  for (double r : ratios) logs.push_back(std::log(r));
  return sample_stddev(logs);
}

double RatioBootstrap::p_value() const {
  const auto at_most_one = std::upper_bound(ratios.begin(), ratios.end(), 1.0) - ratios.begin();
  const auto at_least_one = ratios.end() - std::lower_bound(ratios.begin(), ratios.end(), 1.0);
  const double tail = static_cast<double>(std::min(at_most_one, at_least_one));
  return std::min(1.0, 2 * tail / static_cast<double>(ratios.size()));
}

RatioBootstrap bootstrap_ratio(const Groups& patched, const Groups& control, uint64_t resamples,
                               uint64_t seed) {
  require_arm(patched, "the patched arm");
  require_arm(control, "the control arm");
  if (resamples == 0) throw std::invalid_argument("bootstrap: zero resamples");
  RatioBootstrap out;
  out.estimate = mean_of_point_means(patched) / mean_of_point_means(control);
  out.ratios.reserve(resamples);
  Xoshiro256 rng(seed);
  for (uint64_t b = 0; b < resamples; ++b) {
    const double p = resample_arm(patched, rng);
    out.ratios.push_back(p / resample_arm(control, rng));
  }
  std::sort(out.ratios.begin(), out.ratios.end());
  return out;
}

}  // namespace ks::stats

#include "stats/summary.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace ks::stats {
namespace {

void require_values(std::span<const double> xs, const char* what) {
  if (xs.empty()) throw std::invalid_argument(std::string(what) + " of an empty sample");
}

}  // namespace

double mean(std::span<const double> xs) {
  require_values(xs, "mean");
  return std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
}

std::vector<double> logs(std::span<const double> xs) {
  std::vector<double> out;
  out.reserve(xs.size());
  for (double x : xs) out.push_back(std::log(x));
  return out;
}

double sample_stddev(std::span<const double> xs) {
  if (xs.size() < 2) return 0.0;
  const double m = mean(xs);
  double sum_sq = 0;
  for (double x : xs) sum_sq += (x - m) * (x - m);
  return std::sqrt(sum_sq / static_cast<double>(xs.size() - 1));
}

double median(std::span<const double> xs) {
  require_values(xs, "median");
  std::vector<double> sorted(xs.begin(), xs.end());
  std::sort(sorted.begin(), sorted.end());
  const std::size_t mid = sorted.size() / 2;
  return sorted.size() % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

double pct_change(double from, double to) {
  if (from == 0) throw std::invalid_argument("percent change from zero");
  return 100.0 * (to - from) / from;
}

Summary summarize(std::span<const double> xs) {
  require_values(xs, "summary");
  Summary s;
  s.n = xs.size();
  s.mean = mean(xs);
  s.min = *std::min_element(xs.begin(), xs.end());
  s.max = *std::max_element(xs.begin(), xs.end());
  s.stddev = sample_stddev(xs);
  s.median = median(xs);
  s.mean_skip_first = xs.size() == 1 ? s.mean : mean(xs.subspan(1));
  return s;
}

}  // namespace ks::stats

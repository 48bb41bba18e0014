#include "stats/holm.hpp"

#include <algorithm>
#include <numeric>

namespace ks::stats {

std::vector<std::size_t> holm_order(std::span<const double> p) {
  std::vector<std::size_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return p[a] < p[b]; });
  return order;
}

std::vector<double> holm_adjust(std::span<const double> p) {
  const auto order = holm_order(p);
  std::vector<double> adjusted(p.size());
  double running_max = 0;
  for (std::size_t rank = 0; rank < order.size(); ++rank) {
    const double scaled = std::min(1.0, static_cast<double>(p.size() - rank) * p[order[rank]]);
    running_max = std::max(running_max, scaled);
    adjusted[order[rank]] = running_max;
  }
  return adjusted;
}

std::vector<double> holm_levels(std::span<const double> p, double alpha) {
  const auto order = holm_order(p);
  std::vector<double> levels(p.size());
  for (std::size_t rank = 0; rank < order.size(); ++rank)
    levels[order[rank]] = alpha / static_cast<double>(p.size() - rank);
  return levels;
}

}  // namespace ks::stats

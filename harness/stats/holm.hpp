#pragma once
// Holm's step-down correction for testing several workloads in one experiment.
#include <cstddef>
#include <span>
#include <vector>

namespace ks::stats {

// Adjusted p-values in input order: sort ascending, p'_(i) = max_{j<=i} min(1, (m-j+1) p_(j))
// (R's p.adjust(p, "holm")).
std::vector<double> holm_adjust(std::span<const double> p);

// Holm's per-test significance levels: the test of rank i (0-based, ascending p, ties by
// input order) is judged at alpha / (m - i). Returned in input order.
std::vector<double> holm_levels(std::span<const double> p, double alpha = 0.05);

// Input indices in ascending p order, ties by input order: the order of Holm's step-down.
std::vector<std::size_t> holm_order(std::span<const double> p);

}  // namespace ks::stats

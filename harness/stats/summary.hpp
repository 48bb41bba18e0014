#pragma once
// Descriptive statistics of one sample (the rounds of one point, or a list of point means).
#include <cstddef>
#include <span>
#include <vector>

namespace ks::stats {

double mean(std::span<const double> xs);            // requires !xs.empty()
double sample_stddev(std::span<const double> xs);   // n - 1 denominator; 0 when n < 2
double median(std::span<const double> xs);          // requires !xs.empty()
// The natural log of each value: ratios are analysed on the log scale. Values must be > 0.
std::vector<double> logs(std::span<const double> xs);

// 100 (to - from) / from: the "%change" every peer prints. from must not be 0.
double pct_change(double from, double to);

struct Summary {
  std::size_t n = 0;
  double mean = 0, min = 0, max = 0, stddev = 0, median = 0;
  double mean_skip_first = 0;  // the first round often pays for cold caches; == mean when n == 1
};

Summary summarize(std::span<const double> xs);  // requires !xs.empty()

}  // namespace ks::stats

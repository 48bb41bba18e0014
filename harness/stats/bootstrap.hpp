#pragma once
// Hierarchical bootstrap of the ratio of means patched / control.
// Descriptive in ksandwich: the verdict reads the t interval of analysis/decision.hpp, because
// with the few points a kernel run has, these percentiles are too narrow (in A/A screens the
// 95% interval excluded 1 in 24-39% of runs).
//
// A point is one boot; its rounds share that boot's page layout and filesystem, so they are
// not independent samples of "the kernel". Each resample therefore draws points within
// each arm with replacement, then rounds within every drawn point with replacement, and
// takes mean(resampled point means, patched) / mean(resampled point means, control).
//
// Reproducible anywhere: the random stream is xoshiro256** (random.hpp) consumed in a fixed
// order (resample by resample; patched arm then control arm; per slot one point index then
// that point's round indices), the statistic uses only + / (no libm), and percentiles are
// order statistics with linear interpolation. Order statistics do not change under ln, so
// the percentile CI of the ratio equals exp of the percentile CI of ln(ratio) up to that
// interpolation; the spread, SE(ln rho), is taken on logs.
#include <cstdint>
#include <span>
#include <vector>

namespace ks::stats {

// One arm: points -> measured rounds of that point (every point non-empty).
using Groups = std::vector<std::vector<double>>;

double mean_of_point_means(const Groups& arm);

struct Ratio {
  double estimate = 1.0;   // observed ratio
  double low = 1.0, high = 1.0;
  double level = 0.95;
};

struct RatioBootstrap {
  double estimate = 1.0;        // observed mean_of_point_means(patched) / (control)
  std::vector<double> ratios;   // resampled ratios, ascending

  Ratio interval(double level) const;  // percentiles (1-level)/2 and (1+level)/2
  double se_log() const;               // sample stddev of ln(resampled ratio)
  // Two-sided bootstrap p-value of "ratio == 1": 2 min(share <= 1, share >= 1), at most 1.
  // Used to order workloads for Holm; the decision itself reads the interval.
  double p_value() const;
};

RatioBootstrap bootstrap_ratio(const Groups& patched, const Groups& control,
                               uint64_t resamples = 10000, uint64_t seed = 1);

// Percentile of an ascending sample, linear interpolation between order statistics at
// position q (n - 1) (Hyndman & Fan type 7; numpy's and R's default).
double percentile(std::span<const double> sorted, double q);

}  // namespace ks::stats

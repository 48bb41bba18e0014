#pragma once
// Variance components (Kalibera & Jones, "Rigorous benchmarking in reasonable time", 2013):
// they say whether more rounds per boot or more boots would narrow the interval.
#include <cstddef>
#include <vector>

#include "stats/bootstrap.hpp"

namespace ks::stats {

struct VarianceComponents {
  double s1_sq = 0;            // S1^2: mean within-point variance of rounds
  double s2_sq = 0;            // S2^2: variance of point means (pooled over arms)
  double t2_sq = 0;            // T2^2 = S2^2 - S1^2 / r, at least 0: the between-boot part
  double rounds_per_point = 0; // r: mean number of rounds per point
  double grand_mean = 0;       // mean of all point means
  std::size_t points = 0;

  double within_sd_pct() const;   // 100 S1 / grand mean
  double between_sd_pct() const;  // 100 T2 / grand mean
};

// Each arm is a list of points, each point its rounds (non-empty). One arm gives Kalibera
// and Jones' estimators as published. With several arms (control and patched differ by the
// effect being measured) the point means deviate from their own arm's mean and S2^2 pools
// those deviations: sum of squares / (points - arms with points). Points with a single
// round contribute no within-point variance; r is the mean round count (the published
// formula assumes equal counts).
VarianceComponents variance_components(const std::vector<Groups>& arms);

}  // namespace ks::stats

#pragma once
// The standard normal distribution, for the large-sample rank tests.

namespace ks::stats {

double normal_sf(double z);        // P(Z > z)
double normal_quantile(double p);  // z with P(Z <= z) = p, 0 < p < 1 (Wichura's AS 241)

}  // namespace ks::stats

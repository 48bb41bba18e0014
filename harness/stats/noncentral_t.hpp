#pragma once
// The noncentral t distribution, for the exact power of a t test on k block log ratios.
//
// T' = (Z + ncp) / sqrt(V / df), Z standard normal, V chi-square with df degrees of freedom.
// A paired t test on k differences with true mean delta and sd sigma has T' with df = k - 1
// and ncp = delta / (sigma / sqrt(k)).

namespace ks::stats {

// P(T' <= t) and P(T' > t), df >= 1 (real). Computed as E[Phi(t S / sqrt(df) - ncp)] over the chi
// distribution of S = sqrt(V) by Simpson's rule on a fine grid (absolute error below ~1e-9);
// the upper tail is integrated on its own so that small tails keep their digits.
double noncentral_t_cdf(double t, double df, double ncp);
double noncentral_t_sf(double t, double df, double ncp);

// P(|T'| > critical): the power of a two-sided t test that rejects beyond +-critical.
double t_test_power_at(double critical, double df, double ncp);

// The exact power of the two-sided one-sample (or paired) t test at level alpha:
// P(|T'| > t_{1 - alpha/2, df}). Both tails count (R's power.t.test(strict = TRUE)).
double t_test_power(double ncp, double df, double alpha = 0.05);

// The noncentrality ncp >= 0 at which P(|T'| > critical) reaches `power`, by bisection.
// The detectable effect is ncp times the standard error of the mean difference. Infinity
// when no ncp up to 1e12 reaches it: a boundary no data cross (an early look of a long
// sequential design).
double ncp_for_power(double critical, double df, double power = 0.8);

}  // namespace ks::stats

#pragma once
// The verdict's interval: Student's t on the logs of the point means.
//
// A point (one boot, one fresh filesystem) is the independent unit; its rounds are not.
// So the test compares point means, on logs so that the ratio becomes a difference:
// estimate ln rho = ln(mean P / mean C) (rho as statistics.md defines it, = the table's
// patched / midpoint in a screen), SE = s sqrt(1/kP + 1/kC) with s^2 the pooled variance of
// the ln point means (each around its own arm's mean), df = kP + kC - 2. Pooling assumes
// both kernels have the same boot-to-boot spread; it is what lets a screen (one patched
// point) have an interval at all, with the single degree of freedom it really has.
//
// Why not the hierarchical bootstrap's percentiles: on A/A simulations (rounds noise 1%,
// boot noise 1-3%) they called a change in 39-57% of screens and 7-29% of confirm runs
// with 2-6 blocks, at a nominal 5%: the bootstrap cannot see the patched arm's boot noise
// with one point, and with few points it shrinks variance by (k-1)/k and uses normal
// quantiles. This interval held 3-6% in the same simulations.
#include <optional>
#include <span>

#include "stats/bootstrap.hpp"

namespace ks::stats {

struct LogRatioTest {
  double estimate = 1.0;  // rho
  double se_log = 0;      // SE(ln rho)
  double sd_log = 0;      // pooled sd of ln point means (boot-to-boot noise, relative)
  double df = 0;

  Ratio interval(double level) const;  // exp(ln rho -+ t_{df, (1+level)/2} SE)
  double p_value() const;              // two-sided, H0: rho = 1
};

// Point means of each arm (all > 0). Nothing when df < 1 (one point in each arm).
std::optional<LogRatioTest> log_ratio_t(std::span<const double> patched_means,
                                        std::span<const double> control_means);

}  // namespace ks::stats

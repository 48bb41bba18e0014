#include "stats/power.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "stats/noncentral_t.hpp"
#include "stats/student_t.hpp"

namespace ks::stats {
namespace {
constexpr double kAlpha = 0.05, kPower = 0.8;
double critical(double df) { return -student_t_quantile(kAlpha / 2, df); }
}  // namespace

double mde_pct(double se_log_ratio, double df) {
  return 100 * ncp_for_power(critical(df), df, kPower) * se_log_ratio;
}

// "MDE <= target" is "power at the target >= 0.8": one power evaluation per k instead of a
// root search, so that a hopeless case (1,000 blocks) stays fast.
int blocks_needed(double sd_log, double target_pct, int blocks_run, int cap) {
  if (target_pct <= 0) throw std::invalid_argument("blocks needed: the target must be positive");
  for (int k = std::max(blocks_run, 2); k < cap; ++k) {
    const double df = 2.0 * k - 2, se = sd_log * std::sqrt(2.0 / k);
    if (t_test_power_at(critical(df), df, target_pct / 100 / se) >= kPower) return k;
  }
  return cap;
}

}  // namespace ks::stats

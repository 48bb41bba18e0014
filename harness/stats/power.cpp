#include "stats/power.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "stats/student_t.hpp"

namespace ks::stats {

double mde_pct(double se_log_ratio, double df) {
  return 100 * (student_t_quantile(0.975, df) + student_t_quantile(0.80, df)) * se_log_ratio;
}

int blocks_needed(double sd_log, double target_pct, int blocks_run, int cap) {
  if (target_pct <= 0) throw std::invalid_argument("blocks needed: the target must be positive");
  for (int k = std::max(blocks_run, 2); k < cap; ++k)
    if (mde_pct(sd_log * std::sqrt(2.0 / k), 2.0 * k - 2) <= target_pct) return k;
  return cap;
}

}  // namespace ks::stats

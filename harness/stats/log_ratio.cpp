#include "stats/log_ratio.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

#include "stats/student_t.hpp"
#include "stats/summary.hpp"

namespace ks::stats {
namespace {

double sum_of_squares_of_logs(std::span<const double> xs) {
  std::vector<double> logs;
  for (double x : xs) logs.push_back(std::log(x));
  const double m = mean(logs);
  double ss = 0;
  for (double l : logs) ss += (l - m) * (l - m);
  return ss;
}

}  // namespace

Ratio LogRatioTest::interval(double level) const {
  const double half = student_t_quantile((1 + level) / 2, df) * se_log;
  const double centre = std::log(estimate);
  return {estimate, std::exp(centre - half), std::exp(centre + half), level};
}

double LogRatioTest::p_value() const {
  const double centre = std::log(estimate);
  if (se_log == 0) return centre == 0 ? 1.0 : 0.0;  // no noise at all: any change is real
  return std::min(1.0, 2 * student_t_sf(std::fabs(centre) / se_log, df));
}

std::optional<LogRatioTest> log_ratio_t(std::span<const double> patched_means,
                                        std::span<const double> control_means) {
  const std::size_t kp = patched_means.size(), kc = control_means.size();
  if (kp == 0 || kc == 0) throw std::invalid_argument("log ratio test needs both arms");
  for (auto arm : {patched_means, control_means})
    for (double m : arm)
      if (!(m > 0)) throw std::invalid_argument("log ratio test needs positive point means");
  if (kp + kc < 3) return std::nullopt;
  LogRatioTest t;
  t.estimate = mean(patched_means) / mean(control_means);
  t.df = static_cast<double>(kp + kc - 2);
  t.sd_log = std::sqrt((sum_of_squares_of_logs(patched_means) +
                        sum_of_squares_of_logs(control_means)) / t.df);
  t.se_log = t.sd_log * std::sqrt(1.0 / kp + 1.0 / kc);
  return t;
}

}  // namespace ks::stats

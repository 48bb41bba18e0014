#include "stats/noncentral_t.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "stats/normal.hpp"
#include "stats/student_t.hpp"

namespace ks::stats {
namespace {

// E[g(S)] for S chi with df degrees of freedom, density proportional to
// s^(df-1) exp(-s^2 / 2). Simpson's rule over mode +- 12 (the chi sd is below 0.76 for any
// df >= 1, so the mass left out is below 1e-30); dividing by the integral of the density on
// the same grid makes normalising constants (lgamma of a huge df) unnecessary. `scale` is
// the distance in s over which g changes: the step is at most a fortieth of it.
template <class G>
double chi_expectation(double df, double scale, G g) {
  const double mode = std::sqrt(std::max(df - 1, 0.0));
  const double lo = std::max(0.0, mode - 12), hi = mode + 12;
  const double h_max = std::min(0.01, scale / 40);
  int n = static_cast<int>(std::ceil((hi - lo) / h_max));
  n = std::clamp(n + (n % 2), 200, 200000);  // even number of intervals
  const double h = (hi - lo) / n;
  const double log_mode = df > 1 ? (df - 1) * std::log(mode) - mode * mode / 2 : 0.0;
  auto density = [&](double s) {
    if (s <= 0) return df == 1 ? 1.0 : 0.0;  // df >= 1 (checked by the callers)
    return std::exp((df - 1) * std::log(s) - s * s / 2 - log_mode);
  };
  double sum = 0, mass = 0;
  for (int i = 0; i <= n; ++i) {
    const double s = lo + i * h;
    const double w = (i == 0 || i == n) ? 1 : (i % 2 ? 4 : 2);
    const double f = w * density(s);
    sum += f * g(s);
    mass += f;
  }
  return sum / mass;
}

void check(double df) {
  if (!(df >= 1)) throw std::invalid_argument("noncentral t needs df >= 1");
}

double g_scale(double t, double df) { return std::sqrt(df) / std::max(std::fabs(t), 1e-3); }

}  // namespace

double noncentral_t_cdf(double t, double df, double ncp) {
  check(df);
  const double r = t / std::sqrt(df);
  return chi_expectation(df, g_scale(t, df), [&](double s) { return normal_sf(ncp - r * s); });
}

double noncentral_t_sf(double t, double df, double ncp) {
  check(df);
  const double r = t / std::sqrt(df);
  return chi_expectation(df, g_scale(t, df), [&](double s) { return normal_sf(r * s - ncp); });
}

double t_test_power_at(double critical, double df, double ncp) {
  return noncentral_t_sf(critical, df, ncp) + noncentral_t_cdf(-critical, df, ncp);
}

double t_test_power(double ncp, double df, double alpha) {
  if (!(alpha > 0 && alpha < 1)) throw std::invalid_argument("t test power needs 0 < alpha < 1");
  return t_test_power_at(-student_t_quantile(alpha / 2, df), df, ncp);
}

double ncp_for_power(double critical, double df, double power) {
  if (!(power > 0 && power < 1)) throw std::invalid_argument("power must be in (0, 1)");
  double lo = 0, hi = 1;
  while (t_test_power_at(critical, df, hi) < power) {
    lo = hi;
    hi *= 2;
    if (hi > 1e12) return std::numeric_limits<double>::infinity();
  }
  // The power is monotone in ncp >= 0; 1e-12 relative is far below anything reported.
  while (hi - lo > 1e-12 * hi) {
    const double mid = lo + (hi - lo) / 2;
    (t_test_power_at(critical, df, mid) < power ? lo : hi) = mid;
  }
  return lo + (hi - lo) / 2;
}

}  // namespace ks::stats

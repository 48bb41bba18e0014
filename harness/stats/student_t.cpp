#include "stats/student_t.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace ks::stats {
namespace {

// Continued fraction for I_x(a, b) (Abramowitz & Stegun 26.5.8), evaluated with the
// modified Lentz method; converges fast for x < (a + 1) / (a + b + 2).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double tiny = 1e-300, eps = 1e-16;
  auto guard = [](double v) { return std::fabs(v) < tiny ? tiny : v; };
  double c = 1, d = 1 / guard(1 - (a + b) * x / (a + 1)), h = d;
  for (int m = 1; m <= 1000; ++m) {
    const double even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
    d = 1 / guard(1 + even * d);
    c = guard(1 + even / c);
    h *= d * c;
    const double odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
    d = 1 / guard(1 + odd * d);
    c = guard(1 + odd / c);
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1) < eps) break;
  }
  return h;
}

// I_x(a, b) with y = 1 - x given separately: 1 - x would lose the digits that matter when
// x is close to 1 (small t with many degrees of freedom).
double incomplete_beta(double a, double b, double x, double y) {
  if (x == 0 || y == 0) return x == 0 ? 0.0 : 1.0;
  const double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) +
                           b * std::log(y);
  if (x < (a + 1) / (a + b + 2)) return std::exp(log_front) * beta_continued_fraction(a, b, x) / a;
  return 1 - std::exp(log_front) * beta_continued_fraction(b, a, y) / b;
}

}  // namespace

double incomplete_beta(double a, double b, double x) {
  if (!(a > 0 && b > 0 && x >= 0 && x <= 1)) throw std::invalid_argument("incomplete beta: bad argument");
  return incomplete_beta(a, b, x, 1 - x);
}

double student_t_sf(double t, double df) {
  if (!(df > 0)) throw std::invalid_argument("t distribution needs df > 0");
  const double x = df / (df + t * t), y = t * t / (df + t * t);
  const double two_tailed = incomplete_beta(df / 2, 0.5, x, y);  // P(|T| > |t|)
  return t >= 0 ? two_tailed / 2 : 1 - two_tailed / 2;
}

// Bisection on the survival function: slower than Newton, but simple, monotone and the same
// on every machine; 200 halvings exhaust double precision for any bracket found below.
double student_t_quantile(double p, double df) {
  if (!(p > 0 && p < 1)) throw std::invalid_argument("t quantile needs 0 < p < 1");
  if (p == 0.5) return 0;
  const double upper_tail = p > 0.5 ? 1 - p : p;
  double lo = 0, hi = 1;
  while (student_t_sf(hi, df) > upper_tail) {
    lo = hi;
    hi *= 2;
    if (hi > 1e300) break;
  }
  for (int i = 0; i < 200 && lo < hi; ++i) {
    const double mid = lo + (hi - lo) / 2;
    if (mid == lo || mid == hi) break;
    (student_t_sf(mid, df) > upper_tail ? lo : hi) = mid;
  }
  const double t = lo + (hi - lo) / 2;
  return p > 0.5 ? t : -t;
}

}  // namespace ks::stats

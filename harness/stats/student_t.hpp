#pragma once
// Student's t distribution, for intervals and tests on a handful of point means.

namespace ks::stats {

double student_t_sf(double t, double df);        // P(T > t), df > 0
double student_t_quantile(double p, double df);  // t with P(T <= t) = p, 0 < p < 1

// Regularized incomplete beta I_x(a, b), a, b > 0, 0 <= x <= 1.
double incomplete_beta(double a, double b, double x);

}  // namespace ks::stats

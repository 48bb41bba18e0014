#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "stats/noncentral_t.hpp"
#include "stats/random.hpp"
#include "stats/student_t.hpp"

namespace st = ks::stats;

TEST_CASE("stats: noncentral t CDF matches high-precision integration", "[stats]") {
  // mpmath 1.3.0 (30 digits): quad over the chi-square of Phi(t sqrt(v/df) - ncp).
  CHECK(st::noncentral_t_cdf(2.0, 4, 1.5) == Approx(0.61892892513965468).epsilon(1e-9));
  CHECK(st::noncentral_t_cdf(-1.0, 9, 3.0) == Approx(5.299987355906686e-5).epsilon(1e-7));
  CHECK(st::noncentral_t_cdf(3.0, 1, 2.0) == Approx(0.52485716173368785).epsilon(1e-9));
  CHECK(st::noncentral_t_cdf(1.0, 30, 0.5) == Approx(0.68710287611718307).epsilon(1e-9));
  CHECK(st::noncentral_t_cdf(0.5, 2, -1.0) == Approx(0.92030426006848501).epsilon(1e-9));
  CHECK(st::noncentral_t_cdf(4.0, 100, 5.0) == Approx(0.16553417133364465).epsilon(1e-9));
  CHECK(st::noncentral_t_sf(4.0, 100, 5.0) == Approx(1 - 0.16553417133364465).epsilon(1e-9));
}

TEST_CASE("stats: noncentral t with ncp 0 is Student's t", "[stats]") {
  for (double df : {1.0, 2.0, 5.0, 30.0, 1e6})
    for (double t : {-3.0, -0.4, 0.0, 1.0, 2.5, 8.0})
      CHECK(st::noncentral_t_sf(t, df, 0.0) == Approx(st::student_t_sf(t, df)).margin(1e-9));
}

TEST_CASE("stats: exact power of the paired t test", "[stats]") {
  // R's power.t.test(n, delta = 1, sd = 1, type = "paired") gives 0.8030962 (n = 10) and
  // 0.4013203 (n = 5): the upper tail alone (strict = FALSE). Both tails, as a two-sided
  // test rejects (mpmath 1.3.0): 0.803096856632722 and 0.401389917371795.
  const double power10 = st::t_test_power(std::sqrt(10.0), 9, 0.05);
  const double power5 = st::t_test_power(std::sqrt(5.0), 4, 0.05);
  CHECK(power10 == Approx(0.803096856632722).epsilon(1e-9));
  CHECK(power5 == Approx(0.401389917371795).epsilon(1e-9));
  const double crit9 = -st::student_t_quantile(0.025, 9), crit4 = -st::student_t_quantile(0.025, 4);
  CHECK(st::noncentral_t_sf(crit9, 9, std::sqrt(10.0)) == Approx(0.8030962).epsilon(1e-7));
  CHECK(st::noncentral_t_sf(crit4, 4, std::sqrt(5.0)) == Approx(0.4013203).epsilon(1e-7));

  // Independently, a seeded Monte Carlo of the test itself: 200,000 samples of n normal
  // differences (mean 1, sd 1), rejected when |t| > t_{.975, n-1}. Binomial sd ~0.0011.
  for (int n : {10, 5}) {
    ks::stats::Xoshiro256 rng(1000 + n);
    const double crit = -st::student_t_quantile(0.025, n - 1);
    int rejected = 0;
    const int runs = 200000;
    for (int r = 0; r < runs; ++r) {
      double sum = 0, sum_sq = 0;
      for (int i = 0; i < n; ++i) {
        const double d = 1 + st::normal_draw(rng);
        sum += d;
        sum_sq += d * d;
      }
      const double mean = sum / n, sd = std::sqrt((sum_sq - n * mean * mean) / (n - 1));
      rejected += std::fabs(mean / (sd / std::sqrt(n))) > crit;
    }
    const double exact = n == 10 ? power10 : power5;
    CHECK(static_cast<double>(rejected) / runs == Approx(exact).margin(0.005));
  }
}

TEST_CASE("stats: noncentrality for a wanted power", "[stats]") {
  // mpmath 1.3.0: root of the two-sided power = 0.8 at t_{.975, df}.
  auto ncp = [](double df) { return st::ncp_for_power(-st::student_t_quantile(0.025, df), df, 0.8); };
  CHECK(ncp(1) == Approx(16.334008869920991).epsilon(1e-8));
  CHECK(ncp(4) == Approx(3.7610595538250195).epsilon(1e-8));
  CHECK(ncp(10) == Approx(3.1099681015776223).epsilon(1e-8));
  CHECK(ncp(1e6) == Approx(2.8015844775574112).epsilon(1e-8));
  CHECK_THROWS(st::noncentral_t_cdf(1.0, 0.5, 0.0));
  CHECK_THROWS(st::t_test_power(1.0, 5, 0.0));
}

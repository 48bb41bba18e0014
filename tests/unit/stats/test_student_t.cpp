#include <catch2/catch.hpp>
#include <vector>

#include "stats/log_ratio.hpp"
#include "stats/student_t.hpp"

using ks::stats::student_t_quantile;
using ks::stats::student_t_sf;

TEST_CASE("stats: t survival function matches R's pt", "[stats]") {
  // R 4.2.2: pt(t, df, lower.tail=FALSE), printed with 17 digits
  CHECK(student_t_sf(12.7, 1) == Approx(0.025012163844672076).epsilon(1e-13));
  CHECK(student_t_sf(0.5, 1) == Approx(0.352416382349566792).epsilon(1e-13));
  CHECK(student_t_sf(2.0, 4) == Approx(0.058058261758407753).epsilon(1e-13));
  CHECK(student_t_sf(-1.5, 10) == Approx(0.917746336777279903).epsilon(1e-13));
  CHECK(student_t_sf(0.1, 30) == Approx(0.460504805895135538).epsilon(1e-13));
  CHECK(student_t_sf(3.0, 1000) == Approx(0.001383354522119095).epsilon(1e-12));
  CHECK(student_t_sf(1.0, 2.5) == Approx(0.202030513639136766).epsilon(1e-13));
  CHECK(student_t_sf(0.0, 7) == Approx(0.5));
}

TEST_CASE("stats: t quantile matches R's qt", "[stats]") {
  // R 4.2.2: qt(p, df); for df = 1 also the closed form tan(pi (p - 1/2)).
  CHECK(student_t_quantile(0.975, 1) == Approx(12.70620473617469415).epsilon(1e-13));
  CHECK(student_t_quantile(0.975, 2) == Approx(4.30265272974946189).epsilon(1e-13));
  CHECK(student_t_quantile(0.975, 4) == Approx(2.77644510519779342).epsilon(1e-13));
  CHECK(student_t_quantile(0.975, 10) == Approx(2.22813885198627393).epsilon(1e-13));
  CHECK(student_t_quantile(0.8, 10) == Approx(0.87905782855058934).epsilon(1e-13));
  CHECK(student_t_quantile(0.8, 1) == Approx(1.37638192047117403).epsilon(1e-13));
  CHECK(student_t_quantile(0.975, 100) == Approx(1.98397151852355158).epsilon(1e-13));
  CHECK(student_t_quantile(0.0125, 3) == Approx(-4.17653484610449865).epsilon(1e-13));
  CHECK(student_t_quantile(0.99995, 1) == Approx(6366.19767131663684268).epsilon(1e-12));
  CHECK(student_t_quantile(0.5, 5) == 0.0);
  CHECK_THROWS(student_t_quantile(1.0, 5));
}

TEST_CASE("stats: regularized incomplete beta matches R's pbeta", "[stats]") {
  // R 4.2.2: pbeta(x, a, b)
  CHECK(ks::stats::incomplete_beta(2.5, 0.5, 0.3) == Approx(0.018927124071945644).epsilon(1e-13));
  CHECK(ks::stats::incomplete_beta(0.5, 3.0, 0.9) == Approx(0.999675025320728938).epsilon(1e-13));
  CHECK(ks::stats::incomplete_beta(10, 20, 0.4) == Approx(0.785318389762825975).epsilon(1e-13));
  CHECK(ks::stats::incomplete_beta(3, 4, 0.0) == 0.0);
  CHECK(ks::stats::incomplete_beta(3, 4, 1.0) == 1.0);
}

TEST_CASE("stats: the log-ratio t test agrees with scipy's pooled t test", "[stats]") {
  // P = {1210, 1190, 1230}, C = {1000, 1020, 990, 1010} (point means).
  // R 4.2.2: r <- t.test(log(P), log(C), var.equal=TRUE) (scipy 1.10.1 ttest_ind(...,
  // equal_var=True) agrees: statistic 16.836619503356328); SE = diff of mean logs / statistic;
  // interval exp(log(rho) -+ qt((1+level)/2, 5) * SE) with rho = mean(P)/mean(C);
  // p = 2 * pt(abs(log(rho)) / SE, 5, lower.tail=FALSE).
  const std::vector<double> p{1210, 1190, 1230}, c{1000, 1020, 990, 1010};
  const auto t = ks::stats::log_ratio_t(p, c);
  REQUIRE(t);
  CHECK(t->df == 5);
  CHECK(t->estimate == Approx(1.2039800995024876).epsilon(1e-15));
  CHECK(t->se_log == Approx(0.011023805764245605).epsilon(1e-12));
  CHECK(t->sd_log == Approx(0.014433549817470286).epsilon(1e-12));
  const auto ci = t->interval(0.95);
  CHECK(ci.low == Approx(1.1703410747889034).epsilon(1e-13));
  CHECK(ci.high == Approx(1.2385860081510693).epsilon(1e-13));
  const auto ci90 = t->interval(0.90);
  CHECK(ci90.low == Approx(1.1775303437605487).epsilon(1e-13));
  CHECK(ci90.high == Approx(1.2310239712113868).epsilon(1e-13));
  CHECK(t->p_value() == Approx(1.3502574925811041e-05).epsilon(1e-11));
}

TEST_CASE("stats: the log-ratio t test on the 000_* screen", "[stats]") {
  // One patched point, two control points (the published clone means): df 1.
  // R 4.2.2: se <- sd(log(C)) * sqrt(1 + 1/2); exp(log(rho) + c(-1, 1) * qt(.975, 1) * se);
  // 2 * pt(abs(log(rho)) / se, 1, lower.tail=FALSE)
  const std::vector<double> p{2159.123}, c{2943.790, 2970.446};
  const auto t = ks::stats::log_ratio_t(p, c);
  REQUIRE(t);
  CHECK(t->df == 1);
  CHECK(t->estimate == Approx(0.7301443500056474).epsilon(1e-14));
  CHECK(t->se_log == Approx(0.0078065635117954392).epsilon(1e-13));
  const auto ci = t->interval(0.95);
  CHECK(ci.low == Approx(0.6611960950400934678).epsilon(1e-13));
  CHECK(ci.high == Approx(0.8062823961669685069).epsilon(1e-13));
  CHECK(t->p_value() == Approx(0.0157983678258514400).epsilon(1e-12));
}

TEST_CASE("stats: the log-ratio t test at the edges", "[stats]") {
  using V = std::vector<double>;
  CHECK_FALSE(ks::stats::log_ratio_t(V{10}, V{12}));  // one point per arm: no noise estimate
  CHECK_THROWS(ks::stats::log_ratio_t(V{}, V{12, 13}));
  CHECK_THROWS(ks::stats::log_ratio_t(V{0}, V{12, 13}));
  // Zero spread: the interval collapses onto the estimate; a change is certain.
  const auto exact = ks::stats::log_ratio_t(V{12, 12}, V{10, 10});
  REQUIRE(exact);
  CHECK(exact->interval(0.95).low == Approx(1.2));
  CHECK(exact->interval(0.95).high == Approx(1.2));
  CHECK(exact->p_value() == 0.0);
  const auto same = ks::stats::log_ratio_t(V{10, 10}, V{10, 10});
  CHECK(same->p_value() == 1.0);
}

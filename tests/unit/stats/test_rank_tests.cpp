#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "stats/rank_tests.hpp"

using ks::stats::RankMethod;
using V = std::vector<double>;

namespace {
const V kSmallX{1.2, 3.4, 2.2, 5.1};
const V kSmallY{0.7, 1.9, 2.8, 0.4, 1.1};
const V kTiesX{1, 2, 2, 3, 4};
const V kTiesY{2, 3, 3, 5, 6, 7};
const V kTenX{10.1, 11.3, 9.8, 12.5, 10.9, 11.7, 13.2, 10.4, 12.0, 11.1};
const V kTenY{9.5, 10.0, 9.9, 10.6, 9.2, 10.8, 9.0, 10.3, 9.7, 11.5};
const V kThreeX{3.1, 4.7, 5.5};
const V kTwelveY{1.0, 1.5, 2.2, 2.9, 3.3, 3.9, 4.1, 4.4, 5.0, 6.1, 0.2, 0.8};
}  // namespace

// Reference: scipy 1.10.1
//   scipy.stats.mannwhitneyu(x, y, alternative='two-sided', method='auto')
// whose method choice was checked against method='exact' / method='asymptotic'.

TEST_CASE("stats: Mann-Whitney exact for small samples without ties", "[stats]") {
  const auto r = ks::stats::mann_whitney_u(kSmallX, kSmallY);
  CHECK(r.method == RankMethod::exact);
  CHECK(r.u == 17.0);
  CHECK(r.p == Approx(0.1111111111111111).epsilon(1e-14));
}

TEST_CASE("stats: Mann-Whitney with a single patched point cannot reach significance", "[stats]") {
  // The screen scheme: one patched point mean against two control point means.
  const auto r = ks::stats::mann_whitney_u(V{1.0}, V{2.0, 3.0});
  CHECK(r.method == RankMethod::exact);
  CHECK(r.u == 0.0);
  CHECK(r.p == Approx(0.6666666666666666).epsilon(1e-14));
}

TEST_CASE("stats: Mann-Whitney with ties uses the corrected normal approximation", "[stats]") {
  const auto r = ks::stats::mann_whitney_u(kTiesX, kTiesY);
  CHECK(r.method == RankMethod::asymptotic);
  CHECK(r.u == 6.0);
  CHECK(r.p == Approx(0.11390314458853068).epsilon(1e-13));
}

TEST_CASE("stats: Mann-Whitney asymptotic when both samples exceed 8", "[stats]") {
  const auto r = ks::stats::mann_whitney_u(kTenX, kTenY);
  CHECK(r.method == RankMethod::asymptotic);
  CHECK(r.u == 84.0);
  CHECK(r.p == Approx(0.011329696684474665).epsilon(1e-13));
}

TEST_CASE("stats: Mann-Whitney exact when only one sample is small", "[stats]") {
  const auto r = ks::stats::mann_whitney_u(kThreeX, kTwelveY);
  CHECK(r.method == RankMethod::exact);
  CHECK(r.u == 27.0);
  CHECK(r.p == Approx(0.232967032967033).epsilon(1e-13));
}

TEST_CASE("stats: Mann-Whitney of complete separation and of identical values", "[stats]") {
  const auto separated = ks::stats::mann_whitney_u(V{7, 8, 9, 10, 11, 12}, V{1, 2, 3, 4, 5, 6});
  CHECK(separated.u == 36.0);
  CHECK(separated.p == Approx(0.0021645021645021645).epsilon(1e-14));  // 2 / C(12, 6)
  const auto identical = ks::stats::mann_whitney_u(V{5, 5}, V{5, 5, 5});
  CHECK(identical.method == RankMethod::asymptotic);
  CHECK(identical.u == 3.0);
  CHECK(identical.p == 1.0);
}

TEST_CASE("stats: exact null distribution of U matches R's pwilcox", "[stats]") {
  // R 4.2.2: pwilcox(c(0, 3, 7, 12), 4, 5)
  CHECK(ks::stats::mann_whitney_cdf(0, 4, 5) == Approx(0.0079365079365079361).epsilon(1e-14));
  CHECK(ks::stats::mann_whitney_cdf(3, 4, 5) == Approx(0.0555555555555555525).epsilon(1e-14));
  CHECK(ks::stats::mann_whitney_cdf(7, 4, 5) == Approx(0.2777777777777777901).epsilon(1e-14));
  CHECK(ks::stats::mann_whitney_cdf(12, 4, 5) == Approx(0.7222222222222222099).epsilon(1e-14));
  CHECK(ks::stats::mann_whitney_cdf(20, 4, 5) == Approx(1.0));
  CHECK(ks::stats::mann_whitney_cdf(-1, 4, 5) == 0.0);
}

// Reference: R 4.2.2
//   r <- wilcox.test(x, y, conf.int=TRUE, exact=TRUE, conf.level=0.95)
//   r$estimate, r$conf.int; achieved level 1 - 2*pwilcox(qu-1, m, n) with
//   qu <- qwilcox(0.025, m, n); if (qu == 0) qu <- 1

TEST_CASE("stats: Hodges-Lehmann exact interval matches R's wilcox.test", "[stats]") {
  const auto r = ks::stats::hodges_lehmann(kSmallX, kSmallY);
  CHECK(r.method == RankMethod::exact);
  CHECK(r.estimate == Approx(1.5));
  CHECK(r.low == Approx(-0.69999999999999996));
  CHECK(r.high == Approx(4.39999999999999947));
  CHECK(r.level == Approx(0.96825396825396826).epsilon(1e-14));
}

TEST_CASE("stats: Hodges-Lehmann on log point means gives the log ratio", "[stats]") {
  const V p{1.21, 1.19, 1.23, 1.20, 1.22, 1.18};
  const V c{1.00, 1.02, 0.99, 1.01, 0.98, 1.001};
  V lp, lc;
  for (double v : p) lp.push_back(std::log(v));
  for (double v : c) lc.push_back(std::log(v));
  const auto r = ks::stats::hodges_lehmann(lp, lc);
  CHECK(r.estimate == Approx(0.18646434394161959).epsilon(1e-13));
  CHECK(r.low == Approx(0.16451493814448989).epsilon(1e-13));
  CHECK(r.high == Approx(0.20701416938432612).epsilon(1e-13));
  CHECK(r.level == Approx(0.95887445887445888).epsilon(1e-14));
}

TEST_CASE("stats: Hodges-Lehmann with one point against two spans all differences", "[stats]") {
  // R warns "requested conf.level not achievable" and reports conf.level 1/3.
  const auto r = ks::stats::hodges_lehmann(V{1.0}, V{2.0, 3.0});
  CHECK(r.estimate == Approx(-1.5));
  CHECK(r.low == Approx(-2.0));
  CHECK(r.high == Approx(-1.0));
  CHECK(r.level == Approx(0.33333333333333337).epsilon(1e-14));
}

TEST_CASE("stats: Hodges-Lehmann exact with a small and a large sample", "[stats]") {
  const auto r = ks::stats::hodges_lehmann(kThreeX, kTwelveY);
  CHECK(r.method == RankMethod::exact);
  CHECK(r.estimate == Approx(1.5000000000000002));
  CHECK(r.low == Approx(-0.99999999999999956));
  CHECK(r.high == Approx(4.0));
  CHECK(r.level == Approx(0.9516483516483516).epsilon(1e-14));
}

// Reference for the asymptotic interval: the documented rule evaluated with numpy 1.24.2 and
// scipy 1.10.1 (tie-corrected sd of U, c = ceil(mn/2 - 0.5 - norm.ppf(0.975) sd),
// D(c) and D(mn + 1 - c) of np.sort(np.subtract.outer(x, y).ravel())).
TEST_CASE("stats: Hodges-Lehmann asymptotic interval with ties", "[stats]") {
  const auto r = ks::stats::hodges_lehmann(kTiesX, kTiesY);
  CHECK(r.method == RankMethod::asymptotic);
  CHECK(r.estimate == Approx(-2.0));
  CHECK(r.low == Approx(-5.0));
  CHECK(r.high == Approx(1.0));
  CHECK(r.level == Approx(0.9675522990977247).epsilon(1e-12));
}

TEST_CASE("stats: Hodges-Lehmann asymptotic interval for larger samples", "[stats]") {
  const auto r = ks::stats::hodges_lehmann(kTenX, kTenY);
  CHECK(r.method == RankMethod::asymptotic);
  CHECK(r.estimate == Approx(1.2000000000000002));
  CHECK(r.low == Approx(0.3000000000000007));
  CHECK(r.high == Approx(2.1999999999999993));
  CHECK(r.level == Approx(0.954845430375721).epsilon(1e-12));
}

TEST_CASE("stats: Hodges-Lehmann of identical samples is a zero shift", "[stats]") {
  const auto r = ks::stats::hodges_lehmann(V{5, 5}, V{5, 5, 5});
  CHECK(r.estimate == 0.0);
  CHECK(r.low == 0.0);
  CHECK(r.high == 0.0);
}

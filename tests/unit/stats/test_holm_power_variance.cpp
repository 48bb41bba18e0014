#include <catch2/catch.hpp>
#include <vector>

#include "stats/holm.hpp"
#include "stats/power.hpp"
#include "stats/variance.hpp"

using V = std::vector<double>;

TEST_CASE("stats: Holm adjustment matches R's p.adjust", "[stats]") {
  // R 4.2.2: p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm")
  const auto a = ks::stats::holm_adjust(V{0.01, 0.04, 0.03, 0.005});
  REQUIRE(a.size() == 4);
  CHECK(a[0] == Approx(0.03));
  CHECK(a[1] == Approx(0.06));
  CHECK(a[2] == Approx(0.06));
  CHECK(a[3] == Approx(0.02));
  // R 4.2.2: p.adjust(c(0.5, 0.02, 0.02, 0.9, 0.001), "holm"): ties and the cap at 1
  const auto b = ks::stats::holm_adjust(V{0.5, 0.02, 0.02, 0.9, 0.001});
  CHECK(b[0] == Approx(1.0));
  CHECK(b[1] == Approx(0.08));
  CHECK(b[2] == Approx(0.08));
  CHECK(b[3] == Approx(1.0));
  CHECK(b[4] == Approx(0.005));
  CHECK(ks::stats::holm_adjust(V{0.2}) == V{0.2});
  CHECK(ks::stats::holm_adjust(V{}).empty());
}

TEST_CASE("stats: Holm levels are alpha/m, alpha/(m-1), ... in ascending p order", "[stats]") {
  const auto levels = ks::stats::holm_levels(V{0.3, 0.001, 0.04});
  CHECK(levels[1] == Approx(0.05 / 3));
  CHECK(levels[2] == Approx(0.05 / 2));
  CHECK(levels[0] == Approx(0.05));
}

TEST_CASE("stats: minimum detectable effect uses the exact power of the t test", "[stats]") {
  // mpmath 1.3.0: 100 se ncp, ncp the root of P(|T'(df, ncp)| > t_{.975, df}) = 0.8. The
  // older shortcut 100 (qt(.975, df) + qt(.8, df)) se said 2.8016, 3.1072 and 14.083.
  CHECK(ks::stats::mde_pct(0.01, 1e6) == Approx(2.8015844775574112).epsilon(1e-8));  // ~2.80 SE
  CHECK(ks::stats::mde_pct(0.01, 10) == Approx(3.1099681015776223).epsilon(1e-8));
  CHECK(ks::stats::mde_pct(0.01, 1) == Approx(16.334008869920991).epsilon(1e-8));
}

TEST_CASE("stats: blocks needed to bring the MDE to the threshold", "[stats]") {
  // Smallest k >= max(k0, 2) with mde_pct(sd sqrt(2/k), 2k-2) <= target. scipy 1.10.1 with
  // the older t-quantile shortcut and mpmath 1.3.0 with the exact power agree on all five.
  CHECK(ks::stats::blocks_needed(0.01, 1.0, 3) == 17);
  CHECK(ks::stats::blocks_needed(0.02, 1.0, 6) == 64);
  CHECK(ks::stats::blocks_needed(0.001, 1.0, 3) == 3);  // already enough: what was run
  CHECK(ks::stats::blocks_needed(0.005, 1.0, 1) == 6);
  CHECK(ks::stats::blocks_needed(1.0, 1.0, 2, 50) == 50);  // hopeless: the cap
  CHECK_THROWS(ks::stats::blocks_needed(0.01, 0.0, 3));
}

TEST_CASE("stats: variance components of one arm (Kalibera and Jones)", "[stats]") {
  // numpy 1.24.2: S1^2 = mean(var(p, ddof=1)), S2^2 = var(point means, ddof=1), r = 4
  const std::vector<ks::stats::Groups> arms{{{5.0, 5.2, 4.9, 5.1}, {5.6, 5.5, 5.8}, {4.7, 4.8, 4.6, 4.9, 4.5}}};
  const auto v = ks::stats::variance_components(arms);
  CHECK(v.points == 3);
  CHECK(v.s1_sq == Approx(0.021666666666666667).epsilon(1e-13));
  CHECK(v.s2_sq == Approx(0.2223148148148145).epsilon(1e-13));
  CHECK(v.rounds_per_point == Approx(4.0));
  CHECK(v.t2_sq == Approx(0.21689814814814784).epsilon(1e-13));
  CHECK(v.grand_mean == Approx(5.127777777777777).epsilon(1e-14));
}

TEST_CASE("stats: variance components pool two arms around their own means", "[stats]") {
  // numpy 1.24.2, pooled formula of variance.hpp; a single-round point adds no S1^2 term.
  const std::vector<ks::stats::Groups> arms{{{10, 11, 12}, {13, 14, 15, 16}},
                                            {{20, 22}, {21, 23, 25}, {19}}};
  const auto v = ks::stats::variance_components(arms);
  CHECK(v.s1_sq == Approx(2.166666666666667).epsilon(1e-13));
  CHECK(v.s2_sq == Approx(4.708333333333333).epsilon(1e-13));
  CHECK(v.rounds_per_point == Approx(2.6));
  CHECK(v.t2_sq == Approx(3.8749999999999996).epsilon(1e-13));
  CHECK(v.grand_mean == Approx(17.7));
  CHECK(v.within_sd_pct() == Approx(8.316159007841666).epsilon(1e-13));
  CHECK(v.between_sd_pct() == Approx(11.12148004803928).epsilon(1e-13));
}

TEST_CASE("stats: between-point variance is clamped at zero", "[stats]") {
  // Point means identical, rounds noisy: S2^2 = 0 < S1^2 / r, so T2^2 = 0, not negative.
  const std::vector<ks::stats::Groups> arms{{{1, 3}, {3, 1}}};
  const auto v = ks::stats::variance_components(arms);
  CHECK(v.s1_sq == Approx(2.0));
  CHECK(v.s2_sq == 0.0);
  CHECK(v.t2_sq == 0.0);
  // One point, one round: nothing to estimate, all zero.
  const auto single = ks::stats::variance_components({{{4.0}}});
  CHECK(single.s1_sq == 0.0);
  CHECK(single.s2_sq == 0.0);
  CHECK(single.grand_mean == 4.0);
}

#include <catch2/catch.hpp>

#include "stats/normal.hpp"

TEST_CASE("stats: normal quantile matches R's qnorm", "[stats]") {
  // R 4.2.2: qnorm(c(0.975, 0.8, 0.001, 1e-10, 0.3, 1-1e-12)), printed with 17 digits
  using ks::stats::normal_quantile;
  CHECK(normal_quantile(0.975) == Approx(1.95996398454005361).epsilon(1e-15));
  CHECK(normal_quantile(0.8) == Approx(0.84162123357291441).epsilon(1e-15));
  CHECK(normal_quantile(0.001) == Approx(-3.09023230616781319).epsilon(1e-15));
  CHECK(normal_quantile(1e-10) == Approx(-6.36134090240405570).epsilon(1e-15));
  CHECK(normal_quantile(0.3) == Approx(-0.52440051270804067).epsilon(1e-15));
  CHECK(normal_quantile(1 - 1e-12) == Approx(7.03448691004783555).epsilon(1e-12));
  CHECK(normal_quantile(0.5) == 0.0);
  CHECK_THROWS(normal_quantile(0.0));
  CHECK_THROWS(normal_quantile(1.0));
}

TEST_CASE("stats: normal survival function matches scipy", "[stats]") {
  // scipy 1.10.1: scipy.stats.norm.sf([1.959963984540054, -0.5, 3.0])
  using ks::stats::normal_sf;
  CHECK(normal_sf(1.959963984540054) == Approx(0.025).epsilon(1e-14));
  CHECK(normal_sf(-0.5) == Approx(0.6914624612740131).epsilon(1e-14));
  CHECK(normal_sf(3.0) == Approx(0.0013498980316300933).epsilon(1e-13));
}

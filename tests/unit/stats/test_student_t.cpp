#include <catch2/catch.hpp>
#include <vector>

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

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "stats/bootstrap.hpp"
#include "stats/random.hpp"

using ks::stats::Groups;

namespace {

// Synthetic arm: `points` boots with mean `level` times a per-boot factor (sd `between`),
// each with `rounds` rounds of relative noise `within`. Deterministic for a given seed.
Groups synthetic_arm(double level, int points, int rounds, double between, double within,
                     uint64_t seed) {
  ks::stats::Xoshiro256 rng(seed);
  auto normal = [&] {  // Box-Muller from two uniforms in (0, 1]
    const double u1 = (static_cast<double>(rng.next() >> 11) + 1) * 0x1.0p-53;
    const double u2 = (static_cast<double>(rng.next() >> 11) + 1) * 0x1.0p-53;
    return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
  };
  Groups arm;
  for (int p = 0; p < points; ++p) {
    const double boot = level * (1 + between * normal());
    std::vector<double> r;
    for (int i = 0; i < rounds; ++i) r.push_back(boot * (1 + within * normal()));
    arm.push_back(r);
  }
  return arm;
}

}  // namespace

TEST_CASE("stats: percentile interpolates like numpy's default", "[stats]") {
  // numpy 1.24.2: np.percentile([1, 2, 4, 8], [0, 25, 50, 97.5, 100]) = 1, 1.75, 3, 7.7, 8
  const std::vector<double> xs{1, 2, 4, 8};
  CHECK(ks::stats::percentile(xs, 0.0) == 1);
  CHECK(ks::stats::percentile(xs, 0.25) == Approx(1.75));
  CHECK(ks::stats::percentile(xs, 0.5) == Approx(3.0));
  CHECK(ks::stats::percentile(xs, 0.975) == Approx(7.7));
  CHECK(ks::stats::percentile(xs, 1.0) == 8);
}

TEST_CASE("stats: bootstrap CI contains the true ratio when noise is tiny", "[stats]") {
  const auto control = synthetic_arm(1000, 6, 10, 0.001, 0.001, 11);
  const auto patched = synthetic_arm(1200, 6, 10, 0.001, 0.001, 12);
  const auto b = ks::stats::bootstrap_ratio(patched, control, 10000, 1);
  const auto ci = b.interval(0.95);
  CHECK(ci.low < 1.2);
  CHECK(ci.high > 1.2 - 1e-12);
  CHECK(ci.low == Approx(1.2).epsilon(0.003));
  CHECK(ci.high == Approx(1.2).epsilon(0.003));
  CHECK(b.estimate == Approx(1.2).epsilon(0.002));
  CHECK(b.p_value() == 0.0);  // no resample crosses 1.0
  CHECK(b.ratios.size() == 10000);
}

TEST_CASE("stats: bootstrap is reproducible from its seed", "[stats]") {
  const auto control = synthetic_arm(1000, 3, 8, 0.02, 0.01, 21);
  const auto patched = synthetic_arm(1010, 3, 8, 0.02, 0.01, 22);
  const auto a = ks::stats::bootstrap_ratio(patched, control, 2000, 99);
  const auto b = ks::stats::bootstrap_ratio(patched, control, 2000, 99);
  const auto c = ks::stats::bootstrap_ratio(patched, control, 2000, 100);
  CHECK(a.ratios == b.ratios);
  CHECK(a.interval(0.95).low == b.interval(0.95).low);
  CHECK(a.interval(0.95).high == b.interval(0.95).high);
  CHECK(a.ratios != c.ratios);
  CHECK(a.interval(0.95).low != c.interval(0.95).low);
  CHECK(a.estimate == c.estimate);  // the observed ratio does not depend on the seed
}

TEST_CASE("stats: bootstrap CI widens with between-point noise", "[stats]") {
  // Same rounds noise; only the boot-to-boot spread differs.
  const auto quiet_c = synthetic_arm(1000, 6, 10, 0.001, 0.01, 31);
  const auto quiet_p = synthetic_arm(1000, 6, 10, 0.001, 0.01, 32);
  const auto noisy_c = synthetic_arm(1000, 6, 10, 0.05, 0.01, 31);
  const auto noisy_p = synthetic_arm(1000, 6, 10, 0.05, 0.01, 32);
  const auto quiet = ks::stats::bootstrap_ratio(quiet_p, quiet_c).interval(0.95);
  const auto noisy = ks::stats::bootstrap_ratio(noisy_p, noisy_c).interval(0.95);
  CHECK((noisy.high - noisy.low) > 3 * (quiet.high - quiet.low));
}

TEST_CASE("stats: the 90% interval lies inside the 95% interval", "[stats]") {
  const auto control = synthetic_arm(500, 4, 6, 0.02, 0.02, 41);
  const auto patched = synthetic_arm(505, 4, 6, 0.02, 0.02, 42);
  const auto b = ks::stats::bootstrap_ratio(patched, control);
  const auto ci95 = b.interval(0.95), ci90 = b.interval(0.90);
  CHECK(ci95.low < ci90.low);
  CHECK(ci90.high < ci95.high);
  CHECK(ci90.level == 0.90);
  CHECK(b.se_log() > 0);
}

TEST_CASE("stats: bootstrap of zero variance is a point", "[stats]") {
  const Groups control{{10, 10, 10}, {10, 10}};
  const Groups patched{{12, 12}, {12, 12, 12}};
  const auto b = ks::stats::bootstrap_ratio(patched, control, 500, 3);
  const auto ci = b.interval(0.95);
  CHECK(b.estimate == Approx(1.2));
  CHECK(ci.low == Approx(1.2));
  CHECK(ci.high == Approx(1.2));
  INFO("se_log " << b.se_log());
  CHECK(b.se_log() < 1e-12);  // only rounding differences between resampled means
}

TEST_CASE("stats: bootstrap with a single point per arm resamples rounds only", "[stats]") {
  const Groups control{{100, 101, 99, 100}};
  const Groups patched{{100, 102, 98, 100}};
  const auto b = ks::stats::bootstrap_ratio(patched, control, 4000, 5);
  const auto ci = b.interval(0.95);
  CHECK(b.estimate == 1.0);
  CHECK(ci.low < 1.0);
  CHECK(ci.high > 1.0);
  CHECK(ci.high - ci.low < 0.05);  // only round noise (about 1%) is visible
  CHECK(b.p_value() > 0.5);
}

TEST_CASE("stats: bootstrap refuses an empty arm or point", "[stats]") {
  CHECK_THROWS(ks::stats::bootstrap_ratio({}, {{1.0}}));
  CHECK_THROWS(ks::stats::bootstrap_ratio({{1.0}}, {{}}));
  CHECK_THROWS(ks::stats::bootstrap_ratio({{1.0}}, {{1.0}}, 0));
}

TEST_CASE("stats: bootstrap regression pin", "[stats]") {
  // REGRESSION PIN, not an independent reference: values printed by this implementation
  // (xoshiro256** seed 1, 10000 resamples) when it was written. If this changes, every
  // published bundle's analysis would no longer recompute: find out why before updating.
  const Groups control{{2943, 2950, 2938, 2961}, {2970, 2975, 2966, 2969}};
  const Groups patched{{2159, 2162, 2150, 2165}};
  const auto b = ks::stats::bootstrap_ratio(patched, control, 10000, 1);
  const auto ci = b.interval(0.95);
  CHECK(b.estimate == Approx(0.7296383913484286).epsilon(1e-15));
  CHECK(ci.low == Approx(0.72562867532253894).epsilon(1e-15));
  CHECK(ci.high == Approx(0.7338711046142391).epsilon(1e-15));
}

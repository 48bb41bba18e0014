// E-divisive means with a permutation test, on seeded synthetic nightly series: how often a
// flat noisy series gets a change point (false alarms), and how small a persistent shift it
// still finds.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <optional>

#include "stats/change_points.hpp"
#include "stats/random.hpp"

using namespace ks::stats;

namespace {

// NIGHTS log ratios with noise sd NOISE, shifted by ln(1 + SHIFT) from night AT on.
std::vector<double> nights(Xoshiro256& rng, int n, double noise, double shift = 0, int at = 0) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(noise * normal_draw(rng) + (shift != 0 && i >= at ? std::log1p(shift) : 0));
  return v;
}

}  // namespace

TEST_CASE("change points: a clear step is found at its night, with its means", "[stats]") {
  std::vector<double> v = {0.00, 0.01, -0.01, 0.005, -0.005, 0.0, 0.10, 0.11, 0.09, 0.105, 0.095, 0.1};
  auto cps = e_divisive_means(v);
  REQUIRE(cps.size() == 1);
  CHECK(cps[0].index == 6);
  CHECK(cps[0].p_value <= 0.01);
  CHECK(cps[0].mean_before == Approx(0.0).margin(1e-12));
  CHECK(cps[0].mean_after == Approx(0.1).margin(1e-12));
}

TEST_CASE("change points: two steps give two change points in order", "[stats]") {
  Xoshiro256 rng(7);
  auto v = nights(rng, 30, 0.005);
  for (int i = 10; i < 30; ++i) v[i] += 0.05;
  for (int i = 20; i < 30; ++i) v[i] -= 0.08;
  auto cps = e_divisive_means(v);
  REQUIRE(cps.size() == 2);
  CHECK(cps[0].index == 10);
  CHECK(cps[1].index == 20);
}

TEST_CASE("change points: too short or constant series have none; the seed fixes the answer", "[stats]") {
  CHECK(e_divisive_means({}).empty());
  CHECK(e_divisive_means({0.0, 1.0, 1.0}).empty());  // shorter than two segments of two
  CHECK(e_divisive_means(std::vector<double>(20, 0.3)).empty());
  Xoshiro256 rng(3);
  auto v = nights(rng, 30, 0.02, 0.03, 15);
  ChangePointOptions o;
  o.seed = 42;
  auto a = e_divisive_means(v, o), b = e_divisive_means(v, o);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].index == b[i].index);
    CHECK(a[i].p_value == b[i].p_value);
  }
}

TEST_CASE("change points: false alarms on flat series and the smallest shift found (seeded)", "[stats]") {
  constexpr int kNights = 30, kAt = 15;
  constexpr double kNoise = 0.02;  // 2% night-to-night noise of the log ratio
  ChangePointOptions o;            // defaults: alpha 0.01, 499 permutations

  Xoshiro256 rng(2026);
  int alarms = 0, series = 1000;
  for (int s = 0; s < series; ++s) {
    o.seed = static_cast<uint64_t>(s + 1);
    if (!e_divisive_means(nights(rng, kNights, kNoise), o).empty()) ++alarms;
  }
  double false_alarm_rate = static_cast<double>(alarms) / series;
  std::printf("change points: %d flat series of %d nights at %.0f%% noise: false alarm rate %.3f "
              "(alpha %.2f)\n", series, kNights, 100 * kNoise, false_alarm_rate, o.alpha);
  CHECK(false_alarm_rate <= 0.025);  // alpha 0.01; 0.025 is ~5 binomial sd above it

  // A persistent shift from night 15 on, counted as found when a change point lands within
  // two nights of it.
  std::optional<double> smallest;
  double rate_at_3_sd = 0;
  for (double shift : {0.01, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04, 0.06}) {
    int found = 0, trials = 200;
    for (int s = 0; s < trials; ++s) {
      o.seed = static_cast<uint64_t>(s + 1);
      for (auto& cp : e_divisive_means(nights(rng, kNights, kNoise, shift, kAt), o))
        if (std::abs(static_cast<int>(cp.index) - kAt) <= 2) {
          ++found;
          break;
        }
    }
    double rate = static_cast<double>(found) / trials;
    std::printf("change points: shift %+.1f%% at night %d of %d, noise %.0f%%: found in %.3f of %d series\n",
                100 * shift, kAt + 1, kNights, 100 * kNoise, rate, trials);
    if (rate >= 0.8 && !smallest) smallest = shift;
    if (shift == 0.06) rate_at_3_sd = rate;
  }
  REQUIRE(smallest);
  std::printf("change points: smallest shift found in >= 80%% of series: %.1f%% (%.2f noise sd)\n",
              100 * *smallest, *smallest / kNoise);
  CHECK(rate_at_3_sd >= 0.95);
  CHECK(*smallest <= 0.04);  // two noise sd, 15 nights either side
}

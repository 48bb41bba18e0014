// E-divisive means with a t test of each split, on seeded synthetic nightly series:
// how often a flat noisy series gets a change point (false alarms), and how small a
// persistent shift it still finds - on a month of nights and on the six nights a new
// history starts with.
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

TEST_CASE("change points: a nearly noiseless step smaller than min_difference is not one", "[stats]") {
  // Nights of an instruction clock (CI's failed nightly, there four): the same two kernels came
  // out 0.9984, 0.9984, 1.0001, 1.0000 - a 0.17% wobble between runs that the t test alone calls
  // a change while nothing changed. (Four nights split two and two are no longer significant:
  // with the wildest night left out a side holds one. Six are.)
  std::vector<double> v = {std::log(0.998376), std::log(0.998444), std::log(0.99841),
                           std::log(1.0001),   std::log(1.0),      std::log(1.00004)};
  REQUIRE(e_divisive_means(v).size() == 1);  // significant ...
  ChangePointOptions material;
  material.min_difference = std::log1p(0.01);
  CHECK(e_divisive_means(v, material).empty());  // ... but not 1%
  // The nightly test's real change, 61x slower from the third night, still is.
  std::vector<double> slow = {std::log(0.998376), std::log(0.998444), std::log(61.2983), std::log(61.2859)};
  auto cps = e_divisive_means(slow, material);
  REQUIRE(cps.size() == 1);
  CHECK(cps[0].index == 2);
}

TEST_CASE("change points: too short or constant series have none", "[stats]") {
  CHECK(e_divisive_means({}).empty());
  CHECK(e_divisive_means({0.0, 1.0, 1.0}).empty());  // shorter than two segments of two
  CHECK(e_divisive_means(std::vector<double>(20, 0.3)).empty());
}

TEST_CASE("change points: the split's t test matches a reference value", "[stats]") {
  // [1, 2, 3] against [4, 6, 8, 10]: pooled variance 4.4, t = 3.12094 on 5 df, two-sided
  // p = 0.026224 (the t density integrated numerically, independently of this code).
  std::vector<double> v = {1, 2, 3, 4, 6, 8, 10};
  CHECK(split_t_p(v, 0, 3, 7) == Approx(0.026224).epsilon(1e-4));
  CHECK(split_t_p({1, 1, 2, 2}, 0, 2, 4) == 0);  // constant sides that differ
  CHECK(split_t_p({1, 1, 1, 1}, 0, 2, 4) == 1);
}

TEST_CASE("change points: false alarms on flat series and the smallest shift found (seeded)", "[stats]") {
  constexpr int kNights = 30, kAt = 15;
  constexpr double kNoise = 0.02;  // 2% night-to-night noise of the log ratio
  ChangePointOptions o;            // defaults: alpha 0.01

  Xoshiro256 rng(2026);
  int alarms = 0, series = 1000;
  for (int s = 0; s < series; ++s)
    if (!e_divisive_means(nights(rng, kNights, kNoise), o).empty()) ++alarms;
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

TEST_CASE("change points: six nights, a shift from the fourth: found when large, no false alarm", "[stats]") {
  // What a new history holds after a week: the nightly end-to-end test's shape. A
  // permutation test could not get below p = 0.1 here; the t test can.
  constexpr int kNights = 6, kAt = 3;
  constexpr double kNoise = 0.02;
  Xoshiro256 rng(6);
  int alarms = 0, series = 10000;
  for (int s = 0; s < series; ++s)
    if (!e_divisive_means(nights(rng, kNights, kNoise)).empty()) ++alarms;
  const double false_alarm_rate = static_cast<double>(alarms) / series;
  std::printf("change points: %d flat series of %d nights at %.0f%% noise: false alarm rate %.4f\n",
              series, kNights, 100 * kNoise, false_alarm_rate);
  CHECK(false_alarm_rate <= 0.013);  // alpha 0.01 (Bonferroni: at most); binomial sd 0.001

  std::optional<double> smallest;
  for (double shift : {0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7}) {
    int exact = 0, trials = 1000;
    for (int s = 0; s < trials; ++s) {
      auto cps = e_divisive_means(nights(rng, kNights, kNoise, shift, kAt));
      if (cps.size() == 1 && cps[0].index == kAt) ++exact;
    }
    const double rate = static_cast<double>(exact) / trials;
    std::printf("change points: shift %+.0f%% at night %d of %d, noise %.0f%%: named exactly in %.3f of %d\n",
                100 * shift, kAt + 1, kNights, 100 * kNoise, rate, trials);
    if (rate >= 0.8 && !smallest) smallest = shift;
    if (shift == 0.7) CHECK(rate >= 0.99);  // the planted slowdown of the nightly test: ~+70%
  }
  REQUIRE(smallest);
  std::printf("change points: six nights: smallest shift named in >= 80%% of series: %.0f%% (%.1f noise sd)\n",
              100 * *smallest, std::log1p(*smallest) / kNoise);
  CHECK(*smallest <= 0.2);
}

TEST_CASE("change points: one disturbed first or last night is not a change point (seeded)", "[stats]") {
  // A month of flat nights whose first or last night a busy host slowed: no change happened,
  // and a change point "between night 28 and 29" would send a reader to bisect a commit range.
  constexpr int kNights = 30;
  constexpr double kNoise = 0.02;
  ChangePointOptions o;
  o.min_difference = std::log1p(0.01);  // what `history` uses: the 1% material threshold
  Xoshiro256 rng(30);
  for (double disturbance : {0.1, 0.2, 0.5, 1.0}) {
    for (bool last : {false, true}) {
      int alarms = 0, series = 2000;
      for (int s = 0; s < series; ++s) {
        auto v = nights(rng, kNights, kNoise);
        v[last ? kNights - 1 : 0] += std::log1p(disturbance);
        if (!e_divisive_means(v, o).empty()) ++alarms;
      }
      const double rate = static_cast<double>(alarms) / series;
      std::printf("change points: %d nights at %.0f%% noise, the %s night %+.0f%%: false change point in %.4f of %d\n",
                  kNights, 100 * kNoise, last ? "last" : "first", 100 * disturbance, rate, series);
      // A night 10% off is five noise sd: sometimes chance lifts its neighbours too (3%, measured;
      // 7-9% before the two rules). Further off, it is plainly one night (16-19% before, <= 0.3% now).
      CHECK(rate <= (disturbance < 0.2 ? 0.05 : 0.01));
    }
  }
  // ... while a real shift of the last two nights (the change landed two nights ago) is found.
  int found = 0, trials = 500;
  for (int s = 0; s < trials; ++s) {
    auto cps = e_divisive_means(nights(rng, kNights, kNoise, 0.2, kNights - 2), o);
    if (cps.size() == 1 && cps[0].index == kNights - 2) ++found;
  }
  std::printf("change points: +20%% from night %d of %d: named exactly in %.3f of %d\n", kNights - 1, kNights,
              static_cast<double>(found) / trials, trials);
  CHECK(found >= trials * 95 / 100);
}

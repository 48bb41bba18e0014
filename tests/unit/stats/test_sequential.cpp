#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "stats/noncentral_t.hpp"
#include "stats/normal.hpp"
#include "stats/random.hpp"
#include "stats/sequential.hpp"
#include "stats/student_t.hpp"

namespace st = ks::stats;
using V = std::vector<double>;
using Decision = st::LookResult::Decision;

TEST_CASE("stats: O'Brien-Fleming-type spending spends alpha by t = 1", "[stats]") {
  CHECK(st::obf_spent(0.05, 0.0) == 0.0);
  CHECK(st::obf_spent(0.05, 1.0) == Approx(0.05).epsilon(1e-12));
  CHECK(st::obf_spent(0.01, 1.0) == Approx(0.01).epsilon(1e-12));
  // Almost nothing early: 4 (1 - Phi(z_{.9875} / sqrt(.2))), gsDesign sfLDOF at t = .2.
  CHECK(st::obf_spent(0.05, 0.2) == Approx(4 * st::normal_sf(2.241402727604947 / std::sqrt(0.2))).epsilon(1e-9));
  CHECK(st::obf_spent(0.05, 0.2) < 2e-6);
  double previous = 0;
  for (double t = 0.05; t <= 1.0; t += 0.05) {
    CHECK(st::obf_spent(0.05, t) > previous);
    previous = st::obf_spent(0.05, t);
  }
}

TEST_CASE("stats: Lan-DeMets OBF boundaries for 5 equally spaced looks", "[stats]") {
  // Published (gsDesign sfLDOF, two-sided symmetric, alpha 0.025 per side; ldbounds):
  // 4.877, 3.357, 2.680, 2.290, 2.031. An independent recursion (Python, on the score scale,
  // trapezoid rule with 1,500 and 3,000 points) gives 4.87688, 3.35701, 2.68028, 2.28982,
  // 2.03103. (The 2.040 sometimes quoted for the last look is the original O'Brien-Fleming
  // design's constant, not the spending-function version.)
  const auto c = st::obf_boundaries(V{0.2, 0.4, 0.6, 0.8, 1.0}, 0.05);
  REQUIRE(c.size() == 5);
  const V expected{4.87688, 3.35701, 2.68028, 2.28982, 2.03103};
  for (std::size_t j = 0; j < 5; ++j) CHECK(c[j] == Approx(expected[j]).margin(2e-4));
  // A single look is the fixed-sample test.
  CHECK(st::obf_boundaries(V{1.0}, 0.05)[0] == Approx(1.959963984540054).epsilon(1e-9));
}

TEST_CASE("stats: OBF boundaries spend what they promise (seeded Monte Carlo)", "[stats]") {
  // 200,000 Brownian paths with 5 equal increments: the share that ever crosses is alpha,
  // and the share first crossing at each look is the spending increment. Binomial sd of the
  // total ~0.0005.
  const V t{0.2, 0.4, 0.6, 0.8, 1.0};
  const auto c = st::obf_boundaries(t, 0.05);
  st::Xoshiro256 rng(20240501);
  const int runs = 200000;
  std::vector<int> first(5, 0);
  for (int r = 0; r < runs; ++r) {
    double s = 0;
    for (int j = 0; j < 5; ++j) {
      s += std::sqrt(0.2) * st::normal_draw(rng);
      if (std::fabs(s / std::sqrt(t[j])) >= c[j]) {
        ++first[j];
        break;
      }
    }
  }
  int total = 0;
  for (int n : first) total += n;
  CHECK(total / double(runs) == Approx(0.05).margin(0.002));
  const double spent_by_3 = st::obf_spent(0.05, 0.6);  // 0.0077
  CHECK((first[0] + first[1] + first[2]) / double(runs) == Approx(spent_by_3).margin(0.001));
}

TEST_CASE("stats: many looks keep the boundaries ordered and finite where it matters", "[stats]") {
  V t;
  for (int k = 3; k <= 40; ++k) t.push_back(k / 40.0);
  const auto c = st::obf_boundaries(t, 0.05);
  REQUIRE(c.size() == t.size());
  for (std::size_t j = 1; j < c.size(); ++j) CHECK(c[j] < c[j - 1]);
  // The last look stays near the fixed-sample 1.96 (OBF spends little early): 2.155 with a
  // look after every block from 3 to 40, against 2.031 with 5 looks and 2.24 for
  // continuous monitoring.
  CHECK(c.back() == Approx(2.155).margin(0.001));
  CHECK_THROWS(st::obf_boundaries(V{0.5, 0.4}, 0.05));
}

TEST_CASE("stats: a single-look design is the fixed-sample t test and TOST", "[stats]") {
  const st::SequentialDesign design{5, 5, 0.05, 2, 1.0};
  const auto b = st::sequential_boundaries(design);
  REQUIRE(b.change.size() == 1);
  // alpha/m = 0.025: the change interval is 97.5%, the equivalence interval 95%.
  CHECK(b.change[0] == Approx(-st::student_t_quantile(0.0125, 4)).epsilon(1e-6));
  CHECK(b.equivalence[0] == Approx(-st::student_t_quantile(0.025, 4)).epsilon(1e-6));
}

TEST_CASE("stats: sequential looks decide change, equivalence, or nothing", "[stats]") {
  const st::SequentialDesign design{3, 10, 0.05, 1, 1.0};
  const auto b = st::sequential_boundaries(design);
  REQUIRE(b.change.size() == 8);
  REQUIRE(b.equivalence.size() == 8);
  for (std::size_t j = 0; j < 8; ++j) CHECK(b.equivalence[j] < b.change[j]);

  // Too few blocks, or no spread: no claim (never a p-value of 0).
  CHECK(st::look(design, b, V{0.1, 0.2}).decision == Decision::NoClaim);
  CHECK(st::look(design, b, V{0.05, 0.05, 0.05, 0.05}).decision == Decision::NoClaim);
  CHECK_THROWS(st::look(design, b, V(11, 0.01)));
  CHECK_THROWS(st::look(design, b, V{0.1, NAN, 0.2}));

  // A clear 20% slowdown, 1% noise, 4 blocks: a material change.
  const V slow{0.19, 0.18, 0.185, 0.175};
  const auto r = st::look(design, b, slow);
  CHECK(r.decision == Decision::Change);
  CHECK(r.material);
  CHECK(r.df == 3);
  CHECK(r.critical == Approx(b.change[1]));
  const double mean = 0.1825, se = std::sqrt(((0.0075 * 0.0075) * 2 + (0.0025 * 0.0025) * 2) / 3) / 2;
  CHECK(r.estimate_log == Approx(mean));
  CHECK(r.lo_log == Approx(mean - b.change[1] * se));
  CHECK(r.hi_log == Approx(mean + b.change[1] * se));
  CHECK(r.eq_lo_log == Approx(mean - b.equivalence[1] * se));

  // A tiny steady change: significant but not material.
  const V tiny{0.0021, 0.0020, 0.0019, 0.0020, 0.0021, 0.0019, 0.0020};
  const auto small = st::look(design, b, tiny);
  CHECK(small.decision == Decision::Change);
  CHECK_FALSE(small.material);

  // Quiet A/A data with a spread of 0.1%: equivalent to within 1% by the sixth block.
  const V quiet{0.001, -0.001, 0.0005, -0.0005, 0.0, 0.0002};
  CHECK(st::look(design, b, quiet).decision == Decision::Equivalent);
  // Noisy A/A data: undecided, Continue before the cap and NoClaim at it.
  const V noisy3{0.02, -0.03, 0.01};
  CHECK(st::look(design, b, noisy3).decision == Decision::Continue);
  const V noisy10{0.02, -0.03, 0.01, 0.04, -0.02, 0.0, 0.03, -0.04, 0.02, -0.01};
  CHECK(st::look(design, b, noisy10).decision == Decision::NoClaim);
  // Before min_blocks there is no look.
  const st::SequentialDesign later{5, 10, 0.05, 1, 1.0};
  CHECK(st::look(later, slow).decision == Decision::Continue);
}

TEST_CASE("stats: the plan is the smallest k_max with the wanted final-look power", "[stats]") {
  const auto plan = st::plan_blocks(0.01, 1.0, 0.05, 0.8, 3, 3, 200);
  REQUIRE(plan.reached);
  CHECK(plan.power >= 0.8);
  const double effect = std::log(1.01);
  auto power_at = [&](int k) {
    const auto b = st::sequential_boundaries({3, k, 0.05, 3, 1.0});
    return st::t_test_power_at(b.change.back(), k - 1, effect / (0.01 / std::sqrt(k)));
  };
  CHECK(power_at(plan.k_max) == Approx(plan.power));
  CHECK(power_at(plan.k_max - 1) < 0.8);
  // The fixed-sample paired t test at alpha/3 needs fewer or the same.
  CHECK(st::t_test_power(effect / (0.01 / std::sqrt(plan.k_max)), plan.k_max - 1, 0.05 / 3) >= 0.8);
  CHECK(plan.expected_blocks_null <= plan.k_max);
  CHECK(plan.expected_blocks_effect < plan.k_max);
  WARN("plan for sd 1%, MDE 1%, 3 workloads: k_max " << plan.k_max << ", power " << plan.power
                                                      << ", expected blocks " << plan.expected_blocks_null
                                                      << " (no change) / " << plan.expected_blocks_effect
                                                      << " (one workload changed by 1%)");
  // Hopeless: the cap, and it says so.
  const auto capped = st::plan_blocks(0.05, 1.0, 0.05, 0.8, 1, 3, 20);
  CHECK_FALSE(capped.reached);
  CHECK(capped.k_max == 20);
  CHECK(capped.power < 0.8);
}

namespace {

struct RunCounts {
  int any_material_change = 0, any_change = 0;
  int change_on_first = 0, material_on_first = 0, equivalent_on_first = 0, change_on_others = 0;
  long blocks = 0;
};

// The whole procedure, written out plainly: three workloads, normal block log ratios with sd
// `sigma`, looks after each block from min_blocks, a workload stops at its first Change or
// Equivalent, the run stops when every workload is decided or at max_blocks.
RunCounts simulate(const st::SequentialDesign& design, double sigma, const V& effects, int runs,
                   uint64_t seed) {
  const auto b = st::sequential_boundaries(design);
  st::Xoshiro256 rng(seed);
  RunCounts counts;
  const std::size_t m = effects.size();
  for (int run = 0; run < runs; ++run) {
    std::vector<V> d(m);
    std::vector<Decision> decision(m, Decision::Continue);
    std::vector<bool> material(m, false);
    int k = 0;
    bool all_decided = false;
    while (!all_decided && k < design.max_blocks) {
      ++k;
      for (std::size_t w = 0; w < m; ++w) d[w].push_back(effects[w] + sigma * st::normal_draw(rng));
      if (k < design.min_blocks) continue;
      all_decided = true;
      for (std::size_t w = 0; w < m; ++w) {
        if (decision[w] == Decision::Change || decision[w] == Decision::Equivalent) continue;
        const auto r = st::look(design, b, d[w]);
        decision[w] = r.decision;
        material[w] = r.material;
        if (r.decision != Decision::Change && r.decision != Decision::Equivalent) all_decided = false;
      }
    }
    counts.blocks += k;
    bool any_change = false, any_material = false, others = false;
    for (std::size_t w = 0; w < m; ++w) {
      if (w > 0) others = others || decision[w] == Decision::Change;
      any_change = any_change || decision[w] == Decision::Change;
      any_material = any_material || (decision[w] == Decision::Change && material[w]);
    }
    counts.any_change += any_change;
    counts.any_material_change += any_material;
    counts.change_on_first += decision[0] == Decision::Change;
    counts.material_on_first += decision[0] == Decision::Change && material[0];
    counts.equivalent_on_first += decision[0] == Decision::Equivalent;
    counts.change_on_others += others;
  }
  return counts;
}

}  // namespace

TEST_CASE("stats: the sequential procedure keeps its error rates (seeded simulation)", "[stats]") {
  // Planned as a maintainer would: a 1% target, three workloads, and a between-block sd of d
  // of 1% (k_max 15) or 2.5% (k_max ~90: many looks at few degrees of freedom).
  const double target_pct = 1.0;
  const int runs = 10000;
  for (double sigma : {0.01, 0.025}) {
    const auto plan = st::plan_blocks(sigma, target_pct, 0.05, 0.8, 3, 3, 200);
    REQUIRE(plan.reached);
    const st::SequentialDesign design{3, plan.k_max, 0.05, 3, target_pct};

    // A/A: no workload changes. A material change on any workload is a false alarm.
    const auto null = simulate(design, sigma, V{0, 0, 0}, runs, 7);
    std::printf("sequential A/A (sd %.1f%%, k_max %d, %d runs): material false alarm on any "
                "workload %.4f (any change %.4f), mean blocks %.2f (plan %.2f)\n",
                100 * sigma, plan.k_max, runs, null.any_material_change / double(runs),
                null.any_change / double(runs), null.blocks / double(runs), plan.expected_blocks_null);
    CHECK(null.any_material_change <= runs * 5 / 100);

    // One workload changed by exactly the target: the change is called in >= 80% of runs.
    const auto effect = simulate(design, sigma, V{std::log1p(target_pct / 100), 0, 0}, runs, 8);
    std::printf("sequential power at the 1%% target (sd %.1f%%): change called %.4f (material "
                "%.4f, wrongly equivalent %.4f; planned final-look power %.4f), other workloads' "
                "false alarm %.4f, mean blocks %.2f (plan %.2f)\n",
                100 * sigma, effect.change_on_first / double(runs),
                effect.material_on_first / double(runs), effect.equivalent_on_first / double(runs),
                plan.power, effect.change_on_others / double(runs), effect.blocks / double(runs),
                plan.expected_blocks_effect);
    CHECK(effect.change_on_first >= runs * 80 / 100);

    // The plan's own expected blocks (4,000 runs of simulate_runs) agree with these.
    CHECK(plan.expected_blocks_null == Approx(null.blocks / double(runs)).margin(0.02 * plan.k_max));
    CHECK(plan.expected_blocks_effect == Approx(effect.blocks / double(runs)).margin(0.02 * plan.k_max));
  }
}

namespace {

enum class Summary { mean, median, best };
const char* name_of(Summary s) { return s == Summary::mean ? "mean" : s == Summary::median ? "median" : "best round"; }

// One point's summary of 10 rounds around the point's level, each ln-normal with sd 1%,
// under one of two kinds of TCG disturbance seen on the development VM:
// - isolated: one round in 20 is twice as slow;
// - stretches: one point in 3 runs a stretch of 6 of its 10 rounds 1.8x slow (as in the
//   default job's A/A run of 2026-11-30, where some points ran 90-105k ns/op for most of
//   their rounds and 48-52k for the rest).
double point_summary(st::Xoshiro256& rng, double level_log, Summary summary, bool stretches) {
  V rounds(10);
  const bool stretch = stretches && rng.below(3) == 0;
  const size_t from = rng.below(5);
  for (size_t i = 0; i < rounds.size(); ++i) {
    rounds[i] = std::exp(level_log + 0.01 * st::normal_draw(rng));
    if (stretches ? stretch && i >= from && i < from + 6 : rng.below(20) == 0) rounds[i] *= stretches ? 1.8 : 2;
  }
  std::sort(rounds.begin(), rounds.end());
  if (summary == Summary::best) return rounds.front();
  if (summary == Summary::median) return (rounds[4] + rounds[5]) / 2;
  double sum = 0;
  for (double r : rounds) sum += r;
  return sum / rounds.size();
}

// A block's d for one workload: a control and a patched point, each on its own boot
// (boot-to-boot sd 0.7%).
double block_log_ratio(st::Xoshiro256& rng, double effect_log, Summary summary, bool stretches) {
  const double control = point_summary(rng, 0.007 * st::normal_draw(rng), summary, stretches);
  const double patched = point_summary(rng, effect_log + 0.007 * st::normal_draw(rng), summary, stretches);
  return std::log(patched / control);
}

}  // namespace

TEST_CASE("stats: one workload at the full alpha: the t boundaries keep alpha exactly", "[stats]") {
  // The boundaries are exact for z statistics; their t translation matches each look's
  // marginal tail, but successive t statistics are less correlated than the z's (each has
  // its own sd estimate), so with few degrees of freedom and a look at every block the
  // union of crossings was larger than alpha: 5.5% at k_max 15 (sd 0.11%). The t boundaries
  // are now scaled by a seeded null simulation; these runs use another seed. With sd large
  // enough that no run stops as Equivalent, 40,000 runs each.
  for (int k_max : {6, 15, 40}) {
    const st::SequentialDesign design{3, k_max, 0.05, 1, 1.0};
    const auto b = st::sequential_boundaries(design);
    const auto r = st::simulate_runs(design, b, 0.09, V{0.0}, 40000, 99);
    std::printf("one workload, alpha 0.05, k_max %d, 40,000 A/A runs: false change rate %.4f (last look's t "
                "boundary %.3f)\n",
                k_max, r.change_rate[0], b.change.back());
    CHECK(r.change_rate[0] > 0.0467);  // 0.05 within 3 binomial sd
    CHECK(r.change_rate[0] < 0.0533);
  }
}

TEST_CASE("stats: disturbed rounds: the best round of a point keeps the sequential run small", "[stats]") {
  // Why a point is summarised by its best round (analysis::point_best): for each kind of
  // disturbance and each summary, the design is planned from that summary's own calibrated
  // spread (a 2,000-block A/A pilot), then 2,000 runs of one workload are simulated with and
  // without a 1% change.
  const int runs = 2000;
  uint64_t seed = 31;
  for (bool stretches : {false, true})
    for (Summary summary : {Summary::mean, Summary::median, Summary::best}) {
      st::Xoshiro256 rng(seed++);
      V pilot(2000);
      for (auto& d : pilot) d = block_log_ratio(rng, 0.0, summary, stretches);
      double mean = 0, ss = 0;
      for (double d : pilot) mean += d / pilot.size();
      for (double d : pilot) ss += (d - mean) * (d - mean);
      const double sigma = std::sqrt(ss / (pilot.size() - 1));
      const auto plan = st::plan_blocks(sigma, 1.0, 0.05, 0.8, 1, 3, 200);
      const st::SequentialDesign design{3, plan.k_max, 0.05, 1, 1.0};
      const auto b = st::sequential_boundaries(design);
      int false_alarms = 0, detected = 0;
      for (int run = 0; run < 2 * runs; ++run) {
        const bool changed = run >= runs;
        V d;
        auto r = st::LookResult{};
        while (static_cast<int>(d.size()) < design.max_blocks) {
          d.push_back(block_log_ratio(rng, changed ? std::log(1.01) : 0.0, summary, stretches));
          r = st::look(design, b, d);
          if (r.decision == Decision::Change || r.decision == Decision::Equivalent) break;
        }
        if (r.decision == Decision::Change) (changed ? detected : false_alarms) += (changed || r.material);
      }
      std::printf("%s disturbance, %s of 10 rounds: sd of d %.2f%%, k_max %d (power planned %.2f), "
                  "A/A material false alarm %.4f, 1%% change called %.4f\n",
                  stretches ? "stretch" : "isolated", name_of(summary), 100 * sigma, plan.k_max,
                  plan.power, false_alarms / double(runs), detected / double(runs));
      // One workload at the full alpha: about 5% (see the single-workload test above);
      // 2,000 runs have a binomial sd of 0.5%.
      CHECK(false_alarms <= runs * 6 / 100);
      // The best round reaches a 1% change within 200 blocks whatever the disturbance, the
      // median only when slow rounds come alone; the 2x rounds swamp a 1% change in a mean,
      // and a stretch of 6 slow rounds out of 10 moves the median.
      const bool plannable = summary == Summary::best || (summary == Summary::median && !stretches);
      if (plannable) {
        CHECK(plan.reached);
        CHECK(detected >= runs * 75 / 100);  // planned 0.8; 2,000 runs: binomial sd 0.009
      } else {
        CHECK_FALSE(plan.reached);
      }
    }
}

TEST_CASE("stats: a deterministic clock's resolution floor: A/A stays honest, 1% is seen at the first look",
          "[stats]") {
  // The main job under QEMU's instruction clock: three workloads, looks from block 3 to 6,
  // material 1%, and the icount floor of 0.05% per block log ratio (evidence/clock.hpp).
  // Measured between fresh boots: 0.002-0.02% per point. Simulated here from zero noise up
  // to the floor itself, and past it (where the floor no longer holds and the t path must).
  const double floor = 0.0005;
  const st::SequentialDesign design{
      .min_blocks = 3, .max_blocks = 6, .alpha = 0.05, .workloads = 3, .material_pct = 1.0, .resolution_sd = floor};
  const auto b = st::sequential_boundaries(design);
  const int runs = 20000;
  for (double sigma : {0.0, 0.00002, 0.0002, floor}) {
    const auto aa = st::simulate_runs(design, b, sigma, V{0, 0, 0}, runs, 11);
    double any_change = 0;
    for (double r : aa.change_rate) any_change += r;
    std::printf("icount floor 0.05%%, A/A at block sd %.3f%%: change on some workload <= %.4f, material %.4f, "
                "mean blocks %.3f\n",
                100 * sigma, any_change, aa.any_material_change_rate, aa.mean_blocks);
    CHECK(any_change <= 0.05);                 // family-wise, summed over the workloads
    CHECK(aa.any_material_change_rate == 0);  // a 1% change is 20 floors away
    // Well under the floor every workload is NO_CHANGE at the first look; at the floor
    // itself a look's sd sometimes exceeds it, and t with 2 df waits for more blocks.
    CHECK(aa.mean_blocks <= (sigma <= 0.4 * floor ? 3.01 : 3.6));

    const auto one = st::simulate_runs(design, b, sigma, V{std::log(1.01), 0, 0}, runs, 12);
    std::printf("icount floor 0.05%%, +1%% on one workload at block sd %.3f%%: found %.4f (material %.4f), "
                "mean blocks %.3f\n",
                100 * sigma, one.change_rate[0], one.material_rate[0], one.mean_blocks);
    CHECK(one.change_rate[0] == 1.0);
    CHECK(one.mean_blocks <= (sigma <= 0.4 * floor ? 3.01 : 3.7));
  }
  // Past the floor the floor's promise is broken: a look whose 2-df sd happens to fall
  // under it judges with too small a spread. Measured, not hidden: at 4x the floor the
  // false change rate rises a little above what the same design gives without a floor,
  // which is why the floor sits 2.5x above the largest spread measured.
  auto no_floor = design;
  no_floor.resolution_sd = 0;
  auto any = [](const st::SimulatedRuns& r) {
    double sum = 0;
    for (double v : r.change_rate) sum += v;
    return sum;
  };
  const double past = any(st::simulate_runs(design, b, 4 * floor, V{0, 0, 0}, runs, 13));
  const double plain = any(st::simulate_runs(no_floor, b, 4 * floor, V{0, 0, 0}, runs, 13));
  std::printf("A/A at 4x the floor: change on some workload <= %.4f with the floor, %.4f without\n", past, plain);
  CHECK(past <= 0.08);
  CHECK(st::look(no_floor, V{0.125, 0.125, 0.125}).decision == Decision::NoClaim);
  const auto at_floor = st::look(design, V{0.125, 0.125, 0.125});
  CHECK(at_floor.decision == Decision::Change);
  CHECK(at_floor.at_floor);
  CHECK(at_floor.hi_log - at_floor.lo_log < 0.01);  // +-0.5%: what the floor allows
}

TEST_CASE("stats: materiality on the median-unbiased estimate: early stops no longer inflate small changes (seeded)",
          "[stats]") {
  // The main job's shape: three workloads (alpha split), looks after blocks 3..6, a block
  // ratio's spread of 3.5%, material 5%. Runs stop at their first decisive look; the
  // estimate there overshoots (issue 26: a true +3% called material 6.5% of the time).
  const st::SequentialDesign design{.min_blocks = 3, .max_blocks = 6, .alpha = 0.05, .workloads = 3,
                                    .material_pct = 5};
  const auto& b = st::cached_boundaries(design);
  constexpr double kSd = 0.035;
  constexpr int kRuns = 3000;
  struct Rates {
    double change = 0, naive = 0, adjusted = 0, naive_mean = 0, adjusted_mean = 0;
  };
  auto simulate = [&](double effect_pct, unsigned long long seed) {
    st::Xoshiro256 rng(seed);
    Rates r;
    int changes = 0;
    for (int run = 0; run < kRuns; ++run) {
      V d;
      for (int k = 1; k <= design.max_blocks; ++k) {
        d.push_back(std::log1p(effect_pct / 100) + kSd * st::normal_draw(rng));
        if (k < design.min_blocks) continue;
        const auto look = st::look(design, b, d);
        if (look.decision == Decision::Equivalent) break;
        if (look.decision != Decision::Change) continue;
        const double sd = std::sqrt([&] {
          double m = 0, ss = 0;
          for (double x : d) m += x / k;
          for (double x : d) ss += (x - m) * (x - m);
          return ss / (k - 1);
        }());
        const double adjusted = st::median_unbiased_log(design, b, k, look.estimate_log, sd);
        ++changes;
        r.naive += look.material;
        r.adjusted += std::fabs(std::expm1(adjusted)) >= 0.05;
        r.naive_mean += 100 * std::expm1(look.estimate_log);
        r.adjusted_mean += 100 * std::expm1(adjusted);
        break;
      }
    }
    r.change = double(changes) / kRuns;
    r.naive /= kRuns;
    r.adjusted /= kRuns;
    r.naive_mean /= std::max(changes, 1);
    r.adjusted_mean /= std::max(changes, 1);
    std::printf("true %+.0f%%: change %.3f; material on the deciding look's estimate %.3f (mean %+.2f%%), on the "
                "median-unbiased one %.3f (mean %+.2f%%); %d runs\n",
                effect_pct, r.change, r.naive, r.naive_mean, r.adjusted, r.adjusted_mean, kRuns);
    return r;
  };
  const auto small = simulate(3, 261);
  // The overshoot the issue measured, and part of it gone: what stays is the significance
  // filter of the last look, which no estimate of the stopping point removes.
  CHECK(small.naive > 0.04);
  CHECK(small.adjusted <= 0.8 * small.naive);
  CHECK(small.adjusted_mean < small.naive_mean - 0.15);
  const auto large = simulate(12, 262);       // a real material change keeps being called one
  CHECK(large.adjusted > 0.9 * large.naive);
  CHECK(large.adjusted_mean == Approx(12).margin(1.5));
  const auto null = simulate(0, 263);
  CHECK(null.adjusted <= null.naive);

  // The estimate is a deterministic function of its inputs, mirrors for a decrease, and is
  // the estimate itself at the first look (nothing earlier could have stopped the run).
  const double up = st::median_unbiased_log(design, b, 5, 0.08, kSd);
  CHECK(st::median_unbiased_log(design, b, 5, 0.08, kSd) == up);
  CHECK(st::median_unbiased_log(design, b, 5, -0.08, kSd) == Approx(-up).margin(0.002));  // other tails of the draws
  CHECK(up < 0.08);
  CHECK(st::median_unbiased_log(design, b, 3, 0.08, kSd) == 0.08);
  CHECK_THROWS_AS(st::median_unbiased_log(design, b, 2, 0.08, kSd), std::invalid_argument);
  CHECK_THROWS_AS(st::median_unbiased_log(design, b, 3, 0.08, 0), std::invalid_argument);
}

TEST_CASE("stats: replacing dropped blocks keeps the power a run was sized for, and its alpha (seeded)", "[stats]") {
  // The main job's design (three workloads, looks after blocks 3..6); each block is lost
  // with probability 0.2 (a failed boot, a disturbed host: independent of the effect). The
  // run replaces up to `budget` lost blocks by new ones at the end (pipeline/run.cpp); the
  // looks count whole blocks and never pass max_blocks.
  const st::SequentialDesign design{.min_blocks = 3, .max_blocks = 6, .alpha = 0.05, .workloads = 3,
                                    .material_pct = 5};
  const auto& b = st::cached_boundaries(design);
  constexpr double kSd = 0.07, kDrop = 0.2;
  constexpr int kRuns = 4000;
  auto power = [&](double effect, int budget, unsigned long long seed) {
    st::Xoshiro256 rng(seed);
    int changes = 0;
    for (int run = 0; run < kRuns; ++run) {
      V d;
      int planned = design.max_blocks, lost = 0;
      for (int block = 0; block < planned; ++block) {
        const double x = effect + kSd * st::normal_draw(rng);
        if (rng.below(1000) < static_cast<uint64_t>(1000 * kDrop)) {
          if (lost++ < budget) ++planned;
          continue;
        }
        d.push_back(x);
        if (static_cast<int>(d.size()) < design.min_blocks) continue;
        const auto look = st::look(design, b, d);
        if (look.decision == Decision::Change) ++changes;
        if (look.decision != Decision::Continue) break;
      }
    }
    return double(changes) / kRuns;
  };
  const double full = power(std::log(1.16), 100, 31);  // every lost block replaced
  const double none = power(std::log(1.16), 0, 31), two = power(std::log(1.16), 2, 31);
  const double null_none = power(0, 0, 32), null_two = power(0, 2, 32);
  std::printf("+16%% at sd %.0f%%, blocks lost with p %.1f: power %.3f without replacement, %.3f with up to 2, "
              "%.3f with all; A/A false change %.4f / %.4f (alpha/3 = %.4f)\n",
              100 * kSd, kDrop, none, two, full, null_none, null_two, 0.05 / 3);
  CHECK(two > none + 0.2);
  CHECK(full >= two);
  CHECK(null_two <= 0.05 / 3 + 0.007);  // binomial sd 0.002 at 4,000 runs
  CHECK(null_none <= 0.05 / 3 + 0.007);
}

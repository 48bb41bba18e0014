// The decision functions pinned to an independent computation, and the sequential look.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <algorithm>
#include <iterator>

#include "analysis/analyze.hpp"
#include "analysis/blocks.hpp"
#include "analysis/decision.hpp"
#include "analysis/inference.hpp"
#include "analysis/verdict.hpp"
#include "analysis/samples.hpp"
#include "stats/noncentral_t.hpp"
#include "stats/power.hpp"
#include "stats/random.hpp"
#include "stats/sequential.hpp"
#include "stats/student_t.hpp"
#include "stats/summary.hpp"
#include "synthetic.hpp"

namespace analysis = ks::analysis;

TEST_CASE("analysis: decide_unpaired is R's pooled t test on the logs", "[analysis]") {
  // P = {1210, 1190, 1230}, C = {1000, 1020, 990, 1010} (point summaries).
  // R 4.2.2: t.test(log(P), log(C), var.equal=TRUE): statistic 16.836619503356328, df 5;
  // the interval exp(mean(log P) - mean(log C) -+ qt(.975, 5) * SE) and p recomputed with
  // mpmath at 50 digits.
  std::vector<double> lp, lc;
  for (double v : {1210.0, 1190.0, 1230.0}) lp.push_back(std::log(v));
  for (double v : {1000.0, 1020.0, 990.0, 1010.0}) lc.push_back(std::log(v));
  auto d = analysis::decide_unpaired(lp, lc, {});
  REQUIRE(d.interval);
  CHECK(*d.df == 5);
  CHECK(std::exp(d.estimate_log) == Approx(1.20394494985739).epsilon(1e-13));
  CHECK(d.interval->low == Approx(1.17030690721966).epsilon(1e-12));
  CHECK(d.interval->high == Approx(1.23854984820239).epsilon(1e-12));
  CHECK(*d.p == Approx(1.35130399209435e-5).epsilon(1e-9));
  CHECK(d.claim == analysis::Claim::change);
}

TEST_CASE("analysis: an early look of a long design claims nothing, within what a bundle holds", "[analysis]") {
  // An uncalibrated confirm run plans max_blocks (at most 100): its first looks ask for a t
  // in the millions (forty-first attack: 45 blocks was exit 70, 20 an infinite bound).
  for (int max_blocks : {6, 20, 45, 100}) {
    INFO(max_blocks << " blocks at most");
    analysis::DecisionOptions o;
    o.material_pct = 5;
    o.sequential = ks::stats::SequentialDesign{.min_blocks = 3, .max_blocks = max_blocks, .alpha = 0.05,
                                               .workloads = 3, .material_pct = 5};
    const std::vector<double> d{std::log(1.01), std::log(0.99), std::log(1.02)};
    analysis::Decision r;
    REQUIRE_NOTHROW(r = analysis::decide_paired(d, o));
    CHECK(r.claim == analysis::Claim::none);
    CHECK(r.interval.has_value() == r.interval90.has_value());
    if (r.interval) CHECK((r.interval->low > 0 && std::isfinite(r.interval->high)));
    if (r.interval90) CHECK((r.interval90->low > 0 && std::isfinite(r.interval90->high)));
    if (r.mde_pct) CHECK(std::isfinite(*r.mde_pct));
    if (max_blocks == 6) CHECK(r.interval);  // a short design's first look has its interval
    if (max_blocks == 100) CHECK_FALSE(r.mde_pct);
  }
}

TEST_CASE("analysis: a confirm look judges through the sequential design", "[analysis]") {
  analysis::DecisionOptions o;
  o.material_pct = 5;
  o.sequential = ks::stats::SequentialDesign{.min_blocks = 3, .max_blocks = 6, .alpha = 0.05, .workloads = 3,
                                             .material_pct = 5};
  // +20% in every block with 0.1% spread: decided at the first look. (With 2 degrees of
  // freedom the first of six looks asks for a t of several hundred: 2% of spread is not
  // enough there, and only later looks can call it.)
  std::vector<double> big{std::log(1.201), std::log(1.199), std::log(1.200)};
  auto d = analysis::decide_paired(big, o);
  CHECK(d.claim == analysis::Claim::change);
  REQUIRE(d.interval);
  CHECK(d.interval->level == Approx(1 - 0.05 / 3));
  // A t statistic between the fixed-sample critical value and the first look's boundary:
  // the fixed interval calls a change, the early sequential look does not (O'Brien-Fleming
  // spends almost nothing of alpha there), and its interval is the wider.
  const double s = 0.01, se = s / std::sqrt(3.0);
  const double fixed_critical = ks::stats::student_t_quantile(1 - 0.05 / 3 / 2, 2);
  const double look_critical = ks::stats::look(*o.sequential, std::vector<double>{-s, 0, s}).critical;
  REQUIRE(look_critical > fixed_critical);
  const double m = (fixed_critical + look_critical) / 2 * se;
  std::vector<double> between{m - s, m, m + s};
  auto fixed_o = o;
  fixed_o.sequential.reset();
  fixed_o.alpha = 0.05 / 3;
  auto fixed = analysis::decide_paired(between, fixed_o);
  auto early = analysis::decide_paired(between, o);
  CHECK(fixed.claim == analysis::Claim::change);
  CHECK(early.claim == analysis::Claim::none);
  CHECK(early.interval->high - early.interval->low > fixed.interval->high - fixed.interval->low);
  // Before min_blocks nothing is claimed, however clear.
  CHECK(analysis::decide_paired({std::log(1.2), std::log(1.21)}, o).claim == analysis::Claim::none);
}

TEST_CASE("analysis: rounds whose canary ran slow are left out and counted", "[analysis]") {
  std::vector<ks::evidence::Point> points(2);
  points[0].id = 0, points[0].arm = "control", points[0].status = "ok";
  points[1].id = 1, points[1].arm = "patched", points[1].status = "ok";
  std::vector<ks::evidence::Row> rows;
  auto row = [&](int point, int round, double ns, double canary) {
    ks::evidence::Row r;
    r.point = point, r.arm = points[point].arm, r.round = round, r.workload = "clone", r.ops = 10;
    r.ns_per_op = ns;
    r.extra = {{"canary_ns", canary}};
    rows.push_back(r);
  };
  for (int i = 0; i < 4; ++i) row(0, i, 1000 + i, 300000);
  row(1, 0, 1100, 300000);
  row(1, 1, 1900, 520000);  // the machine was busy: 1.73x the usual canary
  row(1, 2, 1102, 310000);
  auto samples = analysis::measured_samples(points, rows, "clone", "ns_per_op");
  REQUIRE(samples.size() == 2);
  CHECK(samples[0].disturbed == 0);
  CHECK(samples[0].values.size() == 4);
  CHECK(samples[1].disturbed == 1);
  CHECK(samples[1].values == std::vector<double>{1100, 1102});
  // A point whose every round is disturbed keeps them: there is nothing else to summarise.
  for (auto& r : rows)
    if (r.point == 1) r.extra["canary_ns"] = 900000;
  samples = analysis::measured_samples(points, rows, "clone", "ns_per_op");
  CHECK(samples[1].disturbed == 0);
  CHECK(samples[1].values.size() == 3);
}

TEST_CASE("analysis: a point disturbed throughout drops its block, with the reason", "[analysis]") {
  // Four blocks of a control and a patched point. The patched point of block 2 ran with
  // every canary 1.25x the usual (the host was busy for the whole point, so even its best
  // round is slow); the control point of block 3 at 1.1x is within the rule.
  std::vector<ks::evidence::Point> points;
  std::vector<ks::evidence::Row> rows;
  for (int block = 0; block < 4; ++block)
    for (const char* arm : {"control", "patched"}) {
      ks::evidence::Point p;
      p.id = static_cast<int>(points.size()), p.arm = arm, p.block = block, p.status = "ok";
      points.push_back(p);
      const double slow = block == 2 && p.arm == "patched" ? 1.6 : 1.0;
      const double canary = 300000 * (block == 2 && p.arm == "patched" ? 1.25 : block == 3 && p.arm == "control" ? 1.1 : 1.0);
      for (int round = 0; round < 8; ++round) {
        ks::evidence::Row r;
        r.point = p.id, r.arm = arm, r.block = block, r.round = round, r.workload = "clone", r.ops = 10;
        r.ns_per_op = slow * (p.arm == "patched" ? 1100 : 1000) + round;
        r.extra = {{"canary_ns", canary + round}};
        rows.push_back(r);
      }
    }
  auto samples = analysis::measured_samples(points, rows, "clone", "ns_per_op");
  REQUIRE(samples.size() == 8);
  CHECK(samples[5].disturbed_throughout);
  CHECK(samples[5].canary_factor == Approx(1.25).epsilon(1e-3));
  CHECK_FALSE(samples[6].disturbed_throughout);
  auto blocks = analysis::paired_blocks(points, samples, "control", "patched", false);
  REQUIRE(blocks.dropped.size() == 1);
  CHECK(blocks.dropped[0].block == 2);
  CHECK(blocks.dropped[0].reason == "point 5 (patched) ran disturbed throughout: its fastest canary took 1.25x the usual of its arm");
  REQUIRE(blocks.ratios.size() == 3);
  for (auto& b : blocks.ratios) CHECK(b.ratio == Approx(1.1).epsilon(1e-3));
  // A point of fewer rounds is not judged: the fastest of a few canaries is noise itself.
  std::vector<ks::evidence::Row> few;
  std::copy_if(rows.begin(), rows.end(), std::back_inserter(few), [](auto& r) { return r.round < 3; });
  for (auto& s : analysis::measured_samples(points, few, "clone", "ns_per_op")) CHECK_FALSE(s.disturbed_throughout);
}

TEST_CASE("analysis: a patch that moves the canary is reported, its points are not dropped (seeded)", "[analysis]") {
  // Issue 26, item 1: a +16% regression at 3.5% between-point spread, 6 blocks of 8 rounds,
  // and a patch that makes the canary itself slower (or faster). Judged against the canary
  // pooled over both arms, the patched points all looked disturbed throughout: found in 0.6%
  // of runs at 1.4x (19% INVALID), and a 0.7x canary dropped the controls (60% INVALID).
  analysis::Options o;
  o.scheme = "confirm";
  o.min_blocks = 3;
  o.max_blocks = 6;
  o.bootstrap_resamples = 200;
  ks::test::Noise canary_noise(2026);
  for (double shift : {1.0, 1.4, 0.7}) {
    int found = 0, invalid = 0, noted = 0;
    constexpr int kRuns = 60;  // ~60 ms an analysis: 11 s in all; the old rule found 0.6% at 1.4x
    for (int run = 0; run < kRuns; ++run) {
      auto s = ks::test::synthetic(ks::test::confirm_arms(6), 1000, 1160, 0.035, 0.01, 8, 1000 + run);
      for (auto& r : s.rows)
        r.extra = {{"canary_ns", 300000 * (r.arm == "patched" ? shift : 1.0) * (1 + 0.02 * canary_noise.normal())}};
      auto a = analysis::analyze(s.points, s.rows, {{"clone", "ns_per_op", false}}, o);
      auto& w = a.workloads[0];
      found += w.verdict == "REGRESSION" && w.material;
      invalid += w.verdict == "INVALID";
      noted += std::any_of(w.notes.begin(), w.notes.end(), [](auto& n) { return n.find("the canary (") == 0; });
    }
    std::printf("canary %.1fx in the patched arm, +16%% at 3.5%% spread, 6 blocks: found %.3f, INVALID %.3f, "
                "shift reported %.3f (%d runs)\n",
                shift, double(found) / kRuns, double(invalid) / kRuns, double(noted) / kRuns, kRuns);
    CHECK(found >= 0.95 * kRuns);
    CHECK(invalid == 0);
    if (shift == 1.0) CHECK(noted == 0);
    else CHECK(noted == kRuns);
  }
}

TEST_CASE("analysis: under a clock's resolution floor a zero spread decides, in both directions", "[analysis]") {
  analysis::DecisionOptions o;
  o.material_pct = 1;
  o.resolution_sd = 0.0005;
  o.sequential = ks::stats::SequentialDesign{.min_blocks = 3, .max_blocks = 6, .alpha = 0.05, .workloads = 3,
                                             .material_pct = 1, .resolution_sd = 0.0005};
  // The main job's clone under icount: +11.98% in every block, to the instruction.
  std::vector<double> clone(3, std::log(1.1198));
  auto d = analysis::decide_paired(clone, o);
  CHECK(d.claim == analysis::Claim::change);
  CHECK(d.at_resolution_floor);
  REQUIRE(d.interval);
  CHECK(d.interval->high - d.interval->low < 0.02);  // at most +-1%
  CHECK(d.interval->low > 1.11);
  CHECK(d.mde_basis == "clock's resolution floor");
  // dedupe: -0.001%: equivalent (NO_CHANGE) at the first look.
  std::vector<double> dedupe{std::log(0.99999), std::log(0.99999), std::log(0.99998)};
  auto e = analysis::decide_paired(dedupe, o);
  CHECK(e.claim == analysis::Claim::equivalent);
  // Without the floor the same figures make no claim: zero spread is no noise estimate.
  auto plain = o;
  plain.resolution_sd = 0;
  plain.sequential->resolution_sd = 0;
  CHECK(analysis::decide_paired(clone, plain).claim == analysis::Claim::none);
  // A spread above the floor is the run's own: t with k - 1 df, as without a floor.
  std::vector<double> noisy{std::log(1.10), std::log(1.12), std::log(1.14)};
  auto n = analysis::decide_paired(noisy, o);
  CHECK_FALSE(n.at_resolution_floor);
  REQUIRE(n.df);
  CHECK(*n.df == 2);
}

TEST_CASE("MDE and blocks needed are the sequential design's own, and hold in simulation (seeded)", "[analysis]") {
  // The main job's shape: three workloads, looks after blocks 3..6, alpha 0.05 split over
  // them; a block ratio's spread of 3.5%, known from a calibration.
  constexpr double kSd = 0.035;
  const ks::stats::SequentialDesign design{.min_blocks = 3, .max_blocks = 6, .alpha = 0.05, .workloads = 3,
                                           .material_pct = 5};
  analysis::DecisionOptions o;
  o.material_pct = 5;
  o.calibrated_sd = kSd;
  o.sequential = design;
  ks::stats::Xoshiro256 rng(5);
  std::vector<double> d;
  for (int i = 0; i < 6; ++i) d.push_back(kSd * ks::stats::normal_draw(rng));
  const auto r = analysis::decide_paired(d, o);
  REQUIRE(r.mde_pct);
  REQUIRE(r.blocks_needed);
  const double fixed_mde = ks::stats::mde_pct(kSd / std::sqrt(6.0), 5);  // what was reported before
  const int fixed_blocks = ks::stats::blocks_needed(kSd / std::sqrt(2.0), 5, 6);
  // The power the run really had at its reported MDE, and at the fixed-sample figure.
  // An MDE is a log ratio in percent (ln 1.05 is 4.9%), as every figure of the analysis.
  auto power_at = [&](double pct, const ks::stats::SequentialDesign& at) {
    const std::vector<double> effects{pct / 100, 0, 0};
    return ks::stats::simulate_runs(at, ks::stats::sequential_boundaries(at), kSd, effects, 4000, 11).change_rate[0];
  };
  const double power = power_at(*r.mde_pct, design), power_fixed = power_at(fixed_mde, design);
  std::printf("MDE at 6 blocks, sd %.1f%%, 3 workloads: reported %.2f%% (power %.3f in 4,000 simulated runs); "
              "the fixed-sample figure %.2f%% had power %.3f\n",
              100 * kSd, *r.mde_pct, power, fixed_mde, power_fixed);
  CHECK(power >= 0.78);   // 0.8 by the last look alone; earlier looks add a little
  CHECK(power <= 0.9);    // and not a loose bound either
  CHECK(power_fixed < 0.7);
  auto sized = design;
  sized.max_blocks = *r.blocks_needed;
  const double power_needed = power_at(100 * std::log1p(0.05), sized);
  std::printf("blocks for a 5%% change: %d (power %.3f simulated); the fixed-sample figure said %d\n",
              *r.blocks_needed, power_needed, fixed_blocks);
  CHECK(power_needed >= 0.78);
  CHECK(*r.blocks_needed > fixed_blocks);
}

TEST_CASE("a run planned on a calibration's upper 80% bound reaches its power, on the estimate it mostly does not (seeded)",
          "[analysis]") {
  // A calibration measures 6 control points; a block ratio's true spread is sqrt(2) times a
  // point's. Plans for a 5% change, three workloads, judged by the power the plan truly has.
  constexpr double kPointSd = 0.025, kTarget = 5;
  constexpr int kPoints = 6, kPlans = 150;
  const double true_sd = std::sqrt(2.0) * kPointSd;
  ks::stats::Xoshiro256 rng(57);
  int short_estimate = 0, short_bound = 0;
  auto true_power = [&](int k) {
    const ks::stats::SequentialDesign at{.min_blocks = 3, .max_blocks = k, .alpha = 0.05, .workloads = 3,
                                         .material_pct = kTarget};
    return ks::stats::t_test_power_at(ks::stats::sequential_boundaries(at).change.back(), k - 1,
                                      std::log1p(kTarget / 100) / (true_sd / std::sqrt(k)));
  };
  for (int i = 0; i < kPlans; ++i) {
    std::vector<double> logs;
    for (int p = 0; p < kPoints; ++p) logs.push_back(kPointSd * ks::stats::normal_draw(rng));
    const double sd = std::sqrt(2.0) * ks::stats::sample_stddev(logs);
    auto blocks = [&](double s) { return ks::stats::blocks_for_power(s, kTarget, 0.05, 0.8, 3, 3, 100).k_max; };
    if (true_power(blocks(sd)) < 0.8) ++short_estimate;
    if (true_power(blocks(analysis::sd_upper_bound(sd, kPoints - 1))) < 0.8) ++short_bound;
  }
  std::printf("plans from a %d-point calibration short of power 0.8: %.2f on the estimate, %.2f on its upper 80%% "
              "bound (%d plans)\n",
              kPoints, double(short_estimate) / kPlans, double(short_bound) / kPlans, kPlans);
  CHECK(short_estimate > kPlans / 3);
  CHECK(short_bound <= kPlans / 4);  // 20% by construction of the bound
}

TEST_CASE("a change decided at a later look is judged material on its median-unbiased estimate", "[analysis]") {
  // Six blocks whose t just crosses the last look's boundary of the main job's design (and
  // no earlier one): the estimate, +5.18%, is material (5%) read as it is, but runs that
  // went on to the last look are the ones whose blocks overshot.
  const ks::stats::SequentialDesign design{.min_blocks = 3, .max_blocks = 6, .alpha = 0.05, .workloads = 3,
                                           .material_pct = 5};
  const double c6 = ks::stats::cached_boundaries(design).change[3];
  const std::vector<double> z{1.25, -1.25, 0.75, -0.75, 0.25, -0.25};  // mean 0, every prefix near it
  const double sd_z = ks::stats::sample_stddev(z), m = 0.0505;
  const double s = m / (1.02 * c6) * std::sqrt(6.0) / sd_z;  // t = m / (s sd_z / sqrt 6) = 1.02 c6
  std::vector<double> d;
  for (double v : z) d.push_back(m + s * v);
  analysis::DecisionOptions o;
  o.material_pct = 5;
  o.sequential = design;
  const auto r = analysis::decide_paired(d, o);
  REQUIRE(r.claim == analysis::Claim::change);
  REQUIRE(r.adjusted_log);
  std::printf("decided at look 6: estimate %+.2f%%, median-unbiased %+.2f%%\n", 100 * std::expm1(m),
              100 * std::expm1(*r.adjusted_log));
  CHECK(*r.adjusted_log < m - 0.002);
  CHECK(*r.adjusted_log > 0);
  CHECK(std::expm1(*r.adjusted_log) < 0.05);

  // The verdict: a regression (the interval excludes 1) that is not material, saying why.
  ks::evidence::WorkloadAnalysis w;
  w.workload = "clone";
  analysis::fill_decision(w, r);
  REQUIRE(w.adjusted_ratio);
  analysis::Options options;
  options.material_pct = 5;
  analysis::decide(w, r, true, options);
  CHECK(w.verdict == "REGRESSION");
  CHECK_FALSE(w.material);
  CHECK(std::any_of(w.notes.begin(), w.notes.end(),
                    [](auto& n) { return n.find("median-unbiased for stopping there it is") != std::string::npos; }));

  // A fixed-sample decision has nothing to adjust.
  o.sequential.reset();
  CHECK_FALSE(analysis::decide_paired(d, o).adjusted_log);
}

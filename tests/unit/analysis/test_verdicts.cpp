#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>

#include "analysis/analyze.hpp"
#include "analysis/decision.hpp"
#include "analysis/inference.hpp"
#include "analysis/verdict.hpp"
#include "stats/power.hpp"
#include "stats/student_t.hpp"
#include "synthetic.hpp"

using namespace ks;

namespace {

const std::vector<analysis::WorkloadSpec> kClone{{"clone", "ns_per_op", false}};
const std::vector<std::string> kScreen{"control", "patched", "control"};

analysis::Options confirm() {
  analysis::Options o;
  o.scheme = "confirm";
  return o;
}

bool has_note(const evidence::WorkloadAnalysis& w, const std::string& part) {
  return std::any_of(w.notes.begin(), w.notes.end(),
                     [&](auto& n) { return n.find(part) != std::string::npos; });
}

}  // namespace

TEST_CASE("analysis: an A/A confirm run with small noise is NO_CHANGE", "[analysis]") {
  // 6 blocks, 0.2% boot-to-boot and 0.3% round noise: the 90% CI stays well inside +-1%.
  const auto s = test::synthetic(test::confirm_arms(6), 1000, 1000, 0.002, 0.003, 10, 11);
  const auto a = analysis::analyze(s.points, s.rows, kClone, confirm());
  const auto& w = a.workloads[0];
  REQUIRE(w.ratio_ci90);
  CHECK(w.ratio_ci90->low > 0.99);
  CHECK(w.ratio_ci90->high < 1.01);
  CHECK(w.verdict == "NO_CHANGE");
  CHECK(a.verdict == "NO_CHANGE");
  CHECK_FALSE(w.blocks_needed);
}

TEST_CASE("analysis: an A/A run too noisy to decide is INCONCLUSIVE with its MDE", "[analysis]") {
  // 3% boot-to-boot noise with 3 blocks: neither a change nor equivalence can be shown.
  const auto s = test::synthetic(test::confirm_arms(3), 1000, 1000, 0.03, 0.005, 10, 12);
  const auto a = analysis::analyze(s.points, s.rows, kClone, confirm());
  const auto& w = a.workloads[0];
  CHECK(w.verdict == "INCONCLUSIVE");
  CHECK(a.verdict == "INCONCLUSIVE");
  REQUIRE(w.mde_pct);
  CHECK(*w.mde_pct > 1.0);
  REQUIRE(w.blocks_needed);
  REQUIRE(w.degrees_of_freedom);
  CHECK(*w.degrees_of_freedom == 2);  // paired by block: 3 block ratios, k - 1 df
  // No calibration: the MDE rests on an upper 80% bound of the observed sd of a block ratio,
  // SE = sd / sqrt(3), MDE = 100 (t.975 + t.8) SE at 2 df.
  REQUIRE(w.sd_log_ratio);
  CHECK(w.mde_basis == "observed upper 80% bound");
  const double upper = analysis::sd_upper_bound(*w.sd_log_ratio, 2, 0.80);
  CHECK(upper > *w.sd_log_ratio * 2);  // chi-square 20% quantile at 2 df is 0.446
  CHECK(*w.mde_pct == Approx(stats::mde_pct(upper / std::sqrt(3.0), 2)));
  CHECK(*w.blocks_needed == stats::blocks_needed(upper / std::sqrt(2.0), 1.0, 3));
  CHECK(*w.blocks_needed > 3);
  REQUIRE(w.between_point_sd_pct);
  CHECK(*w.between_point_sd_pct > *w.within_point_sd_pct);  // more boots would help, not rounds
}

TEST_CASE("analysis: a calibrated spread sets the MDE and blocks needed", "[analysis]") {
  const auto s = test::synthetic(test::confirm_arms(3), 1000, 1000, 0.03, 0.005, 10, 12);
  auto o = confirm();
  o.calibrated_sd_log_ratio["clone"] = 0.004;
  const auto w = analysis::analyze(s.points, s.rows, kClone, o).workloads[0];
  CHECK(w.mde_basis == "calibrated");
  REQUIRE(w.calibrated_sd_log_ratio);
  CHECK(*w.calibrated_sd_log_ratio == 0.004);
  REQUIRE(w.mde_pct);
  CHECK(*w.mde_pct == Approx(stats::mde_pct(0.004 / std::sqrt(3.0), 2)));
  // The decision still reads this run's own (noisier) spread: it has 2 df.
  REQUIRE(w.degrees_of_freedom);
  CHECK(*w.degrees_of_freedom == 2);
}

TEST_CASE("analysis: a clear 20% slowdown is a material REGRESSION", "[analysis]") {
  const auto s = test::synthetic(test::confirm_arms(6), 1000, 1200, 0.003, 0.005, 10, 13);
  const auto a = analysis::analyze(s.points, s.rows, kClone, confirm());
  const auto& w = a.workloads[0];
  REQUIRE(w.ratio_ci);
  CHECK(w.ratio_ci->low > 1.15);
  CHECK(w.ratio_ci->high < 1.25);
  CHECK(w.ratio_ci->level == 0.95);
  CHECK(w.verdict == "REGRESSION");
  CHECK(w.material);
  CHECK(a.verdict == "REGRESSION");
  // Hodges-Lehmann and Mann-Whitney agree: 6 vs 6 completely separated point means.
  REQUIRE(w.hodges_lehmann);
  CHECK(w.hodges_lehmann->estimate == Approx(1.2).epsilon(0.01));
  REQUIRE(w.mann_whitney_p);
  CHECK(*w.mann_whitney_p == Approx(2.0 / 924));
  CHECK(w.mann_whitney_method == "exact");
  REQUIRE(w.t_test_p);
  CHECK(*w.t_test_p < 1e-6);
  CHECK(*w.p_holm == *w.t_test_p);  // one workload: nothing to adjust
  REQUIRE(w.bootstrap_ci);
  CHECK(w.bootstrap_ci->low > 1.15);
}

TEST_CASE("analysis: direction follows the metric", "[analysis]") {
  const std::vector<analysis::WorkloadSpec> iops{{"clone", "iops", true}};
  auto lower = test::synthetic(test::confirm_arms(4), 1000, 800, 0.002, 0.003, 5, 14);
  for (auto& r : lower.rows) std::swap(r.iops, r.ns_per_op);  // same values, as IOPS
  auto a = analysis::analyze(lower.points, lower.rows, iops, confirm());
  CHECK(a.workloads[0].verdict == "REGRESSION");  // fewer IOPS is worse

  auto higher = test::synthetic(test::confirm_arms(4), 1000, 1250, 0.002, 0.003, 5, 15);
  for (auto& r : higher.rows) std::swap(r.iops, r.ns_per_op);
  a = analysis::analyze(higher.points, higher.rows, iops, confirm());
  CHECK(a.workloads[0].verdict == "IMPROVEMENT");
  CHECK(a.workloads[0].material);
  CHECK(a.verdict == "IMPROVEMENT");

  const auto faster = test::synthetic(test::confirm_arms(4), 1000, 800, 0.002, 0.003, 5, 16);
  a = analysis::analyze(faster.points, faster.rows, kClone, confirm());
  CHECK(a.workloads[0].verdict == "IMPROVEMENT");  // fewer ns per op is better
}

TEST_CASE("analysis: a significant but immaterial change", "[analysis]") {
  // +0.3% with 0.02% noise: the CI excludes 1.0, the change is below the 1% threshold, and
  // the 90% CI lies inside +-1%: per workload REGRESSION (not material), overall NO_CHANGE.
  const auto s = test::synthetic(test::confirm_arms(6), 1000, 1003, 0.0002, 0.0002, 10, 17);
  const auto a = analysis::analyze(s.points, s.rows, kClone, confirm());
  const auto& w = a.workloads[0];
  CHECK(w.verdict == "REGRESSION");
  CHECK_FALSE(w.material);
  CHECK(a.verdict == "NO_CHANGE");
}

TEST_CASE("analysis: a screen has one degree of freedom: no claim without a calibration", "[analysis]") {
  // Issue 10: one degree of freedom of boot-to-boot noise is no noise estimate. The old
  // analysis called this a material REGRESSION from one patched point.
  const auto s = test::synthetic(kScreen, 1000, 1200, 0.002, 0.003, 15, 18);
  const auto a = analysis::analyze(s.points, s.rows, kClone, {});
  const auto& w = a.workloads[0];
  CHECK(w.verdict == "INCONCLUSIVE");
  CHECK_FALSE(w.material);
  CHECK_FALSE(w.ratio_ci);
  CHECK_FALSE(w.t_test_p);
  CHECK(has_note(w, "1 degree(s) of freedom"));
  REQUIRE(w.mann_whitney_p);
  CHECK(*w.mann_whitney_p == Approx(2.0 / 3));  // 1 vs 2 points: the floor
  CHECK(has_note(w, "cannot reach p < 0.05"));
  CHECK(has_note(w, "Hodges-Lehmann"));
  CHECK(w.hodges_lehmann->level == Approx(1.0 / 3));
  REQUIRE(w.mde_pct);  // from the upper bound of the 1-df spread: large, but printed
  CHECK(w.mde_basis == "observed upper 80% bound");

  // With a calibrated spread the screen can claim what it shows, against a known noise.
  analysis::Options o;
  o.calibrated_sd_log_ratio["clone"] = 0.005;
  const auto c = analysis::analyze(s.points, s.rows, kClone, o).workloads[0];
  CHECK(c.verdict == "REGRESSION");
  CHECK(c.material);
  REQUIRE(c.ratio_ci);
  CHECK_FALSE(c.degrees_of_freedom);  // a known spread: normal quantiles
  CHECK(has_note(c, "calibrated spread"));
  // Centred on the mean of the logs of the points' best rounds (the lowest ns/op):
  // ln P - (ln A + ln B) / 2.
  const double centre = std::log(c.points[1].min) -
                        (std::log(c.points[0].min) + std::log(c.points[2].min)) / 2;
  CHECK(std::log(c.ratio_ci->estimate) == Approx(centre));
}

TEST_CASE("analysis: zero spread is no noise estimate, never p = 0", "[analysis]") {
  // Issue 10, problem 3: A = B = 1000, P = 1010 gave a material REGRESSION with p = 0 and a
  // zero-width interval from three boots.
  test::Synthetic s;
  s.points = {test::make_point(0, "control"), test::make_point(1, "patched"),
              test::make_point(2, "control")};
  test::add_rows(s.rows, 0, "control", {1000, 1000, 1000});
  test::add_rows(s.rows, 1, "patched", {1010, 1010, 1010});
  test::add_rows(s.rows, 2, "control", {1000, 1000, 1000});
  const auto w = analysis::analyze(s.points, s.rows, kClone, {}).workloads[0];
  CHECK(w.verdict == "INCONCLUSIVE");
  CHECK_FALSE(w.t_test_p);
  CHECK_FALSE(w.ratio_ci);
  CHECK(has_note(w, "zero spread"));
  CHECK_FALSE(w.mde_pct);  // an upper bound of zero is zero: no MDE to promise

  // The same in a confirm run: every block ratio exactly +1%.
  test::Synthetic c;
  for (int b = 0; b < 4; ++b) {
    c.points.push_back(test::make_point(2 * b, "control", b));
    c.points.push_back(test::make_point(2 * b + 1, "patched", b));
    test::add_rows(c.rows, 2 * b, "control", {1000, 1000});
    test::add_rows(c.rows, 2 * b + 1, "patched", {1010, 1010});
  }
  const auto cw = analysis::analyze(c.points, c.rows, kClone, confirm()).workloads[0];
  CHECK(cw.verdict == "INCONCLUSIVE");
  CHECK_FALSE(cw.t_test_p);
  CHECK(has_note(cw, "zero spread"));
  CHECK(cw.delta_pct == Approx(1.0));
}

TEST_CASE("analysis: confirm is paired by block and delta_pct is the estimate", "[analysis]") {
  // Issue 10, problem 5: C100 P95 | P95 C80 | C100 P95.5. The old table took the first and
  // last control points (delta -4.83%) while the estimate was ln(mean P / mean C) (+1.96%).
  test::Synthetic s;
  const std::vector<std::pair<std::string, double>> order{
      {"control", 100}, {"patched", 95}, {"patched", 95}, {"control", 80},
      {"control", 100}, {"patched", 95.5}};
  for (int i = 0; i < 6; ++i) {
    s.points.push_back(test::make_point(i, order[i].first, i / 2));
    test::add_rows(s.rows, i, order[i].first, {order[i].second, order[i].second});
  }
  const auto w = analysis::analyze(s.points, s.rows, kClone, confirm()).workloads[0];
  const std::vector<double> d{std::log(95.0 / 100), std::log(95.0 / 80), std::log(95.5 / 100)};
  const double mean_d = (d[0] + d[1] + d[2]) / 3;
  CHECK(w.delta_pct == Approx(100 * (std::exp(mean_d) - 1)));
  CHECK(w.delta_pct == Approx(2.515).margin(0.001));  // the old estimate said +1.96%
  REQUIRE(w.block_ratios.size() == 3);
  CHECK(w.block_ratios[1].block == 1);
  CHECK(w.block_ratios[1].control_point == 3);
  CHECK(w.block_ratios[1].patched_point == 2);
  CHECK(w.block_ratios[1].ratio == Approx(95.0 / 80));
  CHECK(w.blocks_dropped.empty());
  // Every point: the arm means, the first and last control points, the control trend.
  CHECK(w.patched == Approx((95 + 95 + 95.5) / 3));
  CHECK(w.control_midpoint == Approx((100 + 80 + 100) / 3.0));
  CHECK(w.control_a == 100);
  CHECK(w.control_b == 100);
  REQUIRE(w.control_trend_pct_per_block);
  CHECK(*w.control_trend_pct_per_block == Approx(0.0).margin(1e-9));  // 100, 80, 100: flat fit
  // The decision is centred on the mean of the block logs, with k - 1 df.
  REQUIRE(w.ratio_ci);
  CHECK(std::log(w.ratio_ci->estimate) == Approx(mean_d));
  CHECK(*w.degrees_of_freedom == 2);
  CHECK(w.verdict == "INCONCLUSIVE");
}

TEST_CASE("analysis: a failed point drops its block whole", "[analysis]") {
  auto s = test::synthetic(test::confirm_arms(6), 1000, 1200, 0.003, 0.005, 10, 41);
  s.points[4].status = "failed";  // block 2
  s.points[4].failure = "kernel panic";
  const auto a = analysis::analyze(s.points, s.rows, kClone, confirm());
  const auto& w = a.workloads[0];
  REQUIRE(w.blocks_dropped.size() == 1);
  CHECK(w.blocks_dropped[0].block == 2);
  CHECK(w.blocks_dropped[0].reason.find("kernel panic") != std::string::npos);
  CHECK(w.block_ratios.size() == 5);
  CHECK(*w.degrees_of_freedom == 4);
  // The failed point's rows are no evidence, and its partner's block is not used either.
  CHECK(std::none_of(w.points.begin(), w.points.end(), [](auto& p) { return p.point == 4; }));
  CHECK(w.verdict == "REGRESSION");
  CHECK(w.gates_failed.empty());
  CHECK(a.verdict == "REGRESSION");
}

TEST_CASE("analysis: a point's best round ignores slow rounds, even a stretch of them", "[analysis]") {
  // Under TCG one round in ~30 is 2x off: a 70,000 ns/op dedupe round among 38-41k.
  auto s = test::synthetic(test::confirm_arms(6), 40000, 40000, 0.002, 0.01, 15, 42);
  const auto clean = analysis::analyze(s.points, s.rows, kClone, confirm()).workloads[0];
  REQUIRE(clean.verdict == "NO_CHANGE");
  s.rows[3 * 15 + 7].ns_per_op = 70000;  // point 3 (control), round 8
  const auto w = analysis::analyze(s.points, s.rows, kClone, confirm()).workloads[0];
  CHECK(w.points[3].mean > w.points[3].median * 1.015);  // the mean moved by ~2%
  CHECK(w.points[3].min == clean.points[3].min);
  CHECK(w.verdict == "NO_CHANGE");
  CHECK(w.ratio_ci->estimate == clean.ratio_ci->estimate);
  // Every round but the best of point 3 1.8x slow, as the host did to whole stretches of
  // points on 2026-11-30: the median moves 80%, the analysis does not move at all.
  for (int round = 0; round < 15; ++round)
    if (*s.rows[3 * 15 + round].ns_per_op > clean.points[3].min) *s.rows[3 * 15 + round].ns_per_op *= 1.8;
  const auto stretch = analysis::analyze(s.points, s.rows, kClone, confirm()).workloads[0];
  CHECK(stretch.points[3].median > 1.7 * clean.points[3].median);
  CHECK(stretch.verdict == "NO_CHANGE");
  CHECK(stretch.ratio_ci->estimate == clean.ratio_ci->estimate);
}

TEST_CASE("analysis: decide_paired needs a noise estimate", "[analysis]") {
  analysis::DecisionOptions o;
  auto d = analysis::decide_paired({0.01, 0.012}, o);  // 1 df
  CHECK(d.claim == analysis::Claim::none);
  CHECK_FALSE(d.interval);
  CHECK_FALSE(d.p);
  d = analysis::decide_paired({0.01, 0.012, 0.011}, o);  // 2 df
  REQUIRE(d.interval);
  REQUIRE(d.p);
  CHECK(*d.p > 0);
  CHECK(d.claim == analysis::Claim::change);
  CHECK(*d.df == 2);
  // t interval on the logs: mean 0.011, sd 0.001, SE sd / sqrt(3), t(0.975, 2) = 4.302653.
  const double half = 4.302652729911275 * 0.001 / std::sqrt(3.0);
  CHECK(std::log(d.interval->low) == Approx(0.011 - half));
  CHECK(std::log(d.interval->high) == Approx(0.011 + half));
  d = analysis::decide_paired({}, o);
  CHECK(d.claim == analysis::Claim::none);
  o.calibrated_sd = 0.002;
  d = analysis::decide_paired({0.01}, o);  // one block, a known spread
  REQUIRE(d.interval);
  CHECK(d.claim == analysis::Claim::change);
  CHECK(d.mde_basis == "calibrated");
}

TEST_CASE("analysis: chi-square quantiles for the sd bound", "[analysis]") {
  // df 1: 2 erfinv(0.2)^2; df 2: -2 ln 0.8; df 5, 30: the gamma series by bisection.
  CHECK(analysis::chi_square_quantile(0.2, 1) == Approx(0.0641847546673).epsilon(1e-9));
  CHECK(analysis::chi_square_quantile(0.2, 2) == Approx(-2 * std::log(0.8)).epsilon(1e-12));
  CHECK(analysis::chi_square_quantile(0.2, 5) == Approx(2.342534305841).epsilon(1e-9));
  CHECK(analysis::chi_square_quantile(0.2, 30) == Approx(23.36411457379).epsilon(1e-9));
  CHECK(analysis::sd_upper_bound(1.0, 2) == Approx(std::sqrt(2 / 0.44628710)).epsilon(1e-6));
}

TEST_CASE("analysis: Holm widens the intervals in step-down order", "[analysis]") {
  const std::vector<analysis::WorkloadSpec> two{{"clone", "ns_per_op", false},
                                                {"dedupe", "ns_per_op", false}};
  auto s = test::synthetic(test::confirm_arms(6), 1000, 1200, 0.003, 0.005, 10, 19);
  const auto d = test::synthetic(test::confirm_arms(6), 2000, 2000, 0.003, 0.005, 10, 20, "dedupe");
  s.rows.insert(s.rows.end(), d.rows.begin(), d.rows.end());
  const auto a = analysis::analyze(s.points, s.rows, two, confirm());
  const auto& clone = a.workloads[0];
  const auto& dedupe = a.workloads[1];
  // The clear regression ranks first and is judged at alpha / 2; dedupe at alpha.
  CHECK(clone.ratio_ci->level == Approx(0.975));
  CHECK(dedupe.ratio_ci->level == Approx(0.95));
  CHECK(clone.verdict == "REGRESSION");
  CHECK(clone.ratio_ci90->level == 0.90);
  REQUIRE(clone.p_holm);
  CHECK(*clone.p_holm == Approx(std::min(1.0, 2 * *clone.t_test_p)));
  CHECK(*dedupe.p_holm >= *dedupe.t_test_p);
  CHECK(a.verdict == "REGRESSION");
}

namespace {
// A judge whose decision has two-sided p = `p` (df 10, SE 1%), in the slower direction.
analysis::Judge with_p(double p) {
  return [p](double alpha) {
    constexpr double df = 10, se = 0.01;
    analysis::Decision d;
    d.estimate_log = stats::student_t_quantile(1 - p / 2, df) * se;
    d.p = p;
    d.df = df;
    const double half = stats::student_t_quantile(1 - alpha / 2, df) * se;
    d.interval = evidence::Interval{std::exp(d.estimate_log), std::exp(d.estimate_log - half),
                                    std::exp(d.estimate_log + half), 1 - alpha};
    d.claim = d.interval->low > 1.0 ? analysis::Claim::change : analysis::Claim::none;
    return d;
  };
}
}  // namespace

TEST_CASE("analysis: Holm's step-down stops at the first interval containing 1", "[analysis]") {
  // p = 0.03 ranks first and is judged at alpha/2 = 0.025: its 97.5% interval contains 1
  // and Holm stops; p = 0.04 would pass at 0.05 on its own but is not reached.
  std::vector<evidence::WorkloadAnalysis> ws(2);
  auto judged = analysis::apply_holm(ws, {with_p(0.04), with_p(0.03)});
  CHECK(judged[1].decision->interval->level == Approx(0.975));
  CHECK(judged[1].decision->interval->low < 1.0);
  CHECK(judged[0].decision->interval->level == Approx(0.95));
  CHECK(judged[0].decision->interval->low > 1.0);
  CHECK_FALSE(judged[0].significant);
  CHECK_FALSE(judged[1].significant);
  CHECK(has_note(ws[0], "step-down stopped"));
  // R 4.2.2: p.adjust(c(0.04, 0.03), "holm") = 0.06 0.06
  CHECK(*ws[0].p_holm == Approx(0.06));
  CHECK(*ws[1].p_holm == Approx(0.06));

  // p = 0.02 passes at 0.025, then p = 0.04 at 0.05.
  std::vector<evidence::WorkloadAnalysis> ws2(2);
  judged = analysis::apply_holm(ws2, {with_p(0.04), with_p(0.02)});
  CHECK(judged[0].significant);
  CHECK(judged[1].significant);
  CHECK(*ws2[1].p_holm == Approx(0.04));
  CHECK(*ws2[0].p_holm == Approx(0.04));
}

TEST_CASE("analysis: Holm ignores workloads without a decision", "[analysis]") {
  std::vector<evidence::WorkloadAnalysis> ws(2);
  const auto judged = analysis::apply_holm(ws, {analysis::Judge{}, with_p(0.01)});
  CHECK_FALSE(judged[0].decision);
  CHECK_FALSE(ws[0].p_holm);
  CHECK(judged[1].decision->interval->level == Approx(0.95));  // one test: no widening
  CHECK(*ws[1].p_holm == Approx(0.01));
  CHECK(judged[1].significant);
}

TEST_CASE("analysis: overall verdict rules", "[analysis]") {
  auto w = [](std::string verdict, bool material) {
    evidence::WorkloadAnalysis x;
    x.verdict = std::move(verdict);
    x.material = material;
    return x;
  };
  const std::vector<evidence::Gate> ok{{"semantic", "a", true, ""}};
  const std::vector<evidence::Gate> bad{{"kernel_health", "point 1", false, "BUG"}};
  using analysis::overall_verdict;
  // A failed gate acts through the workloads it touches (analyze sets them INVALID).
  CHECK(overall_verdict({w("INVALID", false)}, bad, 1) == "INVALID");
  CHECK(overall_verdict({}, bad, 1) == "INVALID");
  // One workload's INVALID never hides another's material regression (issue 10, problem 2).
  CHECK(overall_verdict({w("REGRESSION", true), w("INVALID", false)}, ok, 1) == "REGRESSION");
  CHECK(overall_verdict({w("IMPROVEMENT", true), w("INVALID", false)}, ok, 1) == "INVALID");
  CHECK(overall_verdict({w("REGRESSION", false), w("INVALID", false)}, ok, 1) == "INVALID");
  CHECK(overall_verdict({w("IMPROVEMENT", true), w("REGRESSION", true)}, ok, 1) == "REGRESSION");
  CHECK(overall_verdict({w("IMPROVEMENT", true), w("NO_CHANGE", false)}, ok, 1) == "IMPROVEMENT");
  CHECK(overall_verdict({w("NO_CHANGE", false), w("NO_CHANGE", false)}, ok, 1) == "NO_CHANGE");
  CHECK(overall_verdict({w("NO_CHANGE", false), w("INCONCLUSIVE", false)}, ok, 1) == "INCONCLUSIVE");
  // An immaterial change counts as no change only when its 90% CI is inside the band.
  auto small = w("REGRESSION", false);
  small.ratio_ci90 = evidence::Interval{1.004, 1.002, 1.006, 0.90};
  CHECK(overall_verdict({small, w("NO_CHANGE", false)}, ok, 1) == "NO_CHANGE");
  small.ratio_ci90 = evidence::Interval{1.004, 1.002, 1.012, 0.90};
  CHECK(overall_verdict({small}, ok, 1) == "INCONCLUSIVE");
  CHECK(overall_verdict({}, ok, 1) == "INCONCLUSIVE");
}

TEST_CASE("analysis: the same inputs give the same analysis, bit for bit", "[analysis]") {
  const auto s = test::synthetic(test::confirm_arms(4), 1000, 1010, 0.01, 0.01, 8, 21);
  const auto a = analysis::analyze(s.points, s.rows, kClone, confirm());
  const auto b = analysis::analyze(s.points, s.rows, kClone, confirm());
  CHECK(evidence::to_json(a).dump() == evidence::to_json(b).dump());
  auto other_seed = confirm();
  other_seed.seed = 2;
  const auto c = analysis::analyze(s.points, s.rows, kClone, other_seed);
  // The seed moves only the (descriptive) bootstrap; the verdict's interval has no randomness.
  CHECK(c.workloads[0].bootstrap_ci->low != a.workloads[0].bootstrap_ci->low);
  CHECK(c.workloads[0].ratio_ci->low == a.workloads[0].ratio_ci->low);
  CHECK(c.seed == 2);
  CHECK(a.bootstrap_resamples == 10000);
}

TEST_CASE("analysis: the analysis survives a JSON round trip", "[analysis]") {
  const auto s = test::synthetic(kScreen, 1000, 1200, 0.002, 0.003, 5, 22);
  const auto a = analysis::analyze(s.points, s.rows, kClone, {});
  const auto j = evidence::to_json(a);
  const auto back = evidence::analysis_from_json(j);
  CHECK(evidence::to_json(back) == j);
  CHECK(back.workloads[0].notes == a.workloads[0].notes);
  CHECK(back.workloads[0].mann_whitney_method == "exact");
}

namespace {

// A confirm run of BLOCKS blocks whose points' rounds spread by CONTROL_WITHIN and
// PATCHED_WITHIN around their level (1% between points), with SLOW_SHARE of the patched
// rounds 30% slower. The points' levels do not differ between the arms.
test::Synthetic spread_run(int blocks, double control_within, double patched_within, double slow_share,
                           uint64_t seed) {
  test::Noise noise(seed);
  test::Synthetic s;
  const auto arms = test::confirm_arms(blocks);
  for (std::size_t i = 0; i < arms.size(); ++i) {
    const int id = static_cast<int>(i);
    s.points.push_back(test::make_point(id, arms[i], id / 2));
    const bool patched = arms[i] == "patched";
    const double level = 1000 * (1 + 0.01 * noise.normal());
    std::vector<double> values;
    for (int r = 0; r < 16; ++r) {
      double v = level * (1 + (patched ? patched_within : control_within) * noise.normal());
      if (patched && r < static_cast<int>(16 * slow_share)) v *= 1.3;
      values.push_back(v);
    }
    test::add_rows(s.rows, id, arms[i], values);
  }
  return s;
}

}  // namespace

TEST_CASE("analysis: a changed spread is never NO_CHANGE or a change in the direction it biases (seeded)",
          "[analysis]") {
  auto o = confirm();
  o.bootstrap_resamples = 200;
  struct Case {
    const char* what;
    double control_within, patched_within, slow_share;
    const char* forbidden;  // a verdict the best round alone would give falsely
  };
  for (const Case& c : {Case{"spread widened 2% -> 6%", 0.02, 0.06, 0, "IMPROVEMENT"},
                        Case{"spread narrowed 6% -> 2%", 0.06, 0.02, 0, "REGRESSION"},
                        Case{"a quarter of the patched rounds 30% slower", 0.02, 0.02, 0.25, "NO_CHANGE"},
                        Case{"half of the patched rounds 30% slower", 0.02, 0.02, 0.5, "NO_CHANGE"},
                        Case{"A/A", 0.02, 0.02, 0, ""}}) {
    int runs = 200, forbidden = 0, before = 0, tail_notes = 0;
    for (int i = 0; i < runs; ++i) {
      const auto s = spread_run(6, c.control_within, c.patched_within, c.slow_share, 1000 + i);
      const auto w = analysis::analyze(s.points, s.rows, kClone, o).workloads[0];
      auto said = [&](const std::string& v) {
        return w.verdict == v || has_note(w, "the best-round ratio alone would say " + v);
      };
      if (*c.forbidden && (w.verdict == c.forbidden || w.verdict == "NO_CHANGE")) ++forbidden;
      if (*c.forbidden && (said(c.forbidden) || said("NO_CHANGE"))) ++before;
      if (has_note(w, "rounds spread")) ++tail_notes;
    }
    std::printf("spread check, %s, 6 blocks: %s/NO_CHANGE in %.3f of %d runs (the best round alone: %.3f), "
                "tail flagged in %.3f\n",
                c.what, *c.forbidden ? c.forbidden : "-", double(forbidden) / runs, runs, double(before) / runs,
                double(tail_notes) / runs);
    if (*c.forbidden) {
      CHECK(forbidden <= runs / 20);
      CHECK(tail_notes >= runs * 95 / 100);  // and the report says what changed
    } else {
      CHECK(tail_notes <= runs / 20);  // an unchanged spread is seldom flagged
    }
  }
}

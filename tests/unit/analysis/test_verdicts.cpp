#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>

#include "analysis/analyze.hpp"
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
  CHECK(*w.degrees_of_freedom == 4);
  // The boot-to-boot sd behind the MDE: SE = sd sqrt(1/3 + 1/3), MDE = 100 (t.975 + t.8) SE.
  const double t_sum = stats::student_t_quantile(0.975, 4) + stats::student_t_quantile(0.8, 4);
  const double sd = *w.mde_pct / (100 * t_sum) / std::sqrt(2.0 / 3);
  const int k = *w.blocks_needed;
  CHECK(k > 3);
  CHECK(stats::mde_pct(sd * std::sqrt(2.0 / k), 2.0 * k - 2) <= 1.0);
  CHECK(stats::mde_pct(sd * std::sqrt(2.0 / (k - 1)), 2.0 * k - 4) > 1.0);
  REQUIRE(w.between_point_sd_pct);
  CHECK(*w.between_point_sd_pct > *w.within_point_sd_pct);  // more boots would help, not rounds
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

TEST_CASE("analysis: a screen run notes what one patched point cannot show", "[analysis]") {
  const auto s = test::synthetic(kScreen, 1000, 1200, 0.002, 0.003, 15, 18);
  const auto a = analysis::analyze(s.points, s.rows, kClone, {});
  const auto& w = a.workloads[0];
  CHECK(w.verdict == "REGRESSION");
  CHECK(w.material);
  REQUIRE(w.mann_whitney_p);
  CHECK(*w.mann_whitney_p == Approx(2.0 / 3));  // 1 vs 2 point means: the floor
  CHECK(has_note(w, "cannot reach p < 0.05"));
  CHECK(has_note(w, "confirm scheme"));
  CHECK(has_note(w, "Hodges-Lehmann"));
  CHECK(w.hodges_lehmann->level == Approx(1.0 / 3));
  // The bootstrap ratio is the table's patched / midpoint.
  CHECK(w.ratio_ci->estimate == Approx(1 + w.delta_pct / 100));
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
// A t test whose two-sided p is `p` (df 10, SE 1%), in the slower direction.
stats::LogRatioTest with_p(double p) {
  stats::LogRatioTest t;
  t.df = 10;
  t.se_log = 0.01;
  t.estimate = std::exp(stats::student_t_quantile(1 - p / 2, t.df) * t.se_log);
  return t;
}
}  // namespace

TEST_CASE("analysis: Holm's step-down stops at the first interval containing 1", "[analysis]") {
  // p = 0.03 ranks first and is judged at alpha/2 = 0.025: its 97.5% interval contains 1
  // and Holm stops; p = 0.04 would pass at 0.05 on its own but is not reached.
  std::vector<evidence::WorkloadAnalysis> ws(2);
  auto significant = analysis::apply_holm(ws, {with_p(0.04), with_p(0.03)});
  CHECK(ws[1].ratio_ci->level == Approx(0.975));
  CHECK(ws[1].ratio_ci->low < 1.0);
  CHECK(ws[0].ratio_ci->level == Approx(0.95));
  CHECK(ws[0].ratio_ci->low > 1.0);
  CHECK_FALSE(significant[0]);
  CHECK_FALSE(significant[1]);
  CHECK(has_note(ws[0], "step-down stopped"));
  // R 4.2.2: p.adjust(c(0.04, 0.03), "holm") = 0.06 0.06
  CHECK(*ws[0].p_holm == Approx(0.06));
  CHECK(*ws[1].p_holm == Approx(0.06));

  // p = 0.02 passes at 0.025, then p = 0.04 at 0.05.
  std::vector<evidence::WorkloadAnalysis> ws2(2);
  significant = analysis::apply_holm(ws2, {with_p(0.04), with_p(0.02)});
  CHECK(significant[0]);
  CHECK(significant[1]);
  CHECK(*ws2[1].p_holm == Approx(0.04));
  CHECK(*ws2[0].p_holm == Approx(0.04));
}

TEST_CASE("analysis: Holm ignores workloads without inference", "[analysis]") {
  std::vector<evidence::WorkloadAnalysis> ws(2);
  const auto significant = analysis::apply_holm(ws, {std::nullopt, with_p(0.01)});
  CHECK_FALSE(ws[0].ratio_ci);
  CHECK_FALSE(ws[0].p_holm);
  CHECK(ws[1].ratio_ci->level == Approx(0.95));  // one test: no widening
  CHECK(*ws[1].p_holm == Approx(0.01));
  CHECK(significant[1]);
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
  CHECK(overall_verdict({w("NO_CHANGE", false)}, bad, 1) == "INVALID");
  CHECK(overall_verdict({w("REGRESSION", true), w("INVALID", false)}, ok, 1) == "INVALID");
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

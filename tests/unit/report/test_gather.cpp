// Several runs in one report, and the series table naming the patch that costs.
#include <catch2/catch.hpp>

#include "report/gather.hpp"
#include "unit/report/sample_bundle.hpp"
#include "util/error.hpp"

using namespace ks::report;

namespace {

// A step of a series whose clone changed by CLONE_PCT (ns/op: + is slower) and whose IOPS
// workload changed by IOPS_PCT (+ is faster).
GatheredRun step(int index, double clone_pct, double iops_pct, const std::string& verdict) {
  auto b = ks::test::make_sample_bundle();
  ks::test::add_iops_workload(b);
  auto& w = b.analysis->workloads;
  w.erase(w.begin() + 1);  // clone and dio-randwrite
  w[0].delta_pct = clone_pct;
  w[0].verdict = verdict;
  w[1].delta_pct = iops_pct;
  w[1].verdict = "NO_CHANGE";
  b.verdict = verdict;
  b.analysis->verdict = verdict;
  GatheredRun r;
  r.name = "remap-p0" + std::to_string(index);
  r.out_dir = "/d/results/" + r.name;
  r.state = "COMPLETED";
  r.bundle = b;
  r.exit_code = verdict == "REGRESSION" ? 1 : 0;
  r.patch_index = index;
  r.patch_subject = "[PATCH " + std::to_string(index) + "/3] btrfs: step " + std::to_string(index);
  return r;
}

}  // namespace

TEST_CASE("the series table names the patch that adds the most cost, per workload") {
  std::vector<GatheredRun> runs = {step(1, 0.5, -1.0, "NO_CHANGE"), step(2, 12.0, -0.5, "REGRESSION"),
                                   step(3, -2.0, -6.0, "IMPROVEMENT")};
  auto costs = series_costs(runs);
  REQUIRE(costs.steps.size() == 6);
  CHECK(costs.steps[2].index == 2);
  CHECK(costs.steps[2].workload == "clone");
  CHECK(costs.steps[2].cost_pct == Approx(12.0));
  CHECK(costs.steps[5].workload == "dio-randwrite");
  CHECK(costs.steps[5].cost_pct == Approx(6.0));  // fewer IOPS is a cost
  REQUIRE(costs.costliest.size() == 2);
  CHECK(costs.costliest[0].workload == "clone");
  CHECK(costs.costliest[0].index == 2);
  CHECK(costs.costliest[1].workload == "dio-randwrite");
  CHECK(costs.costliest[1].index == 3);
  // base -> base+3: the steps' ratios multiplied.
  CHECK(costs.cumulative[0].change_pct == Approx(100 * (1.005 * 1.12 * 0.98 - 1)));
  auto text = render_gathered(runs, true, "text");
  CHECK(text.find("most expensive for clone: patch 2 \"[PATCH 2/3] btrfs: step 2\"") != std::string::npos);
  CHECK(text.find("==== remap-p03") != std::string::npos);  // each run's own report follows
  auto j = nlohmann::json::parse(render_gathered(runs, true, "json"));
  CHECK(j["series"]["costliest"][0]["index"] == 2);
  CHECK(j["exit_code"] == 1);
  CHECK(j["runs"].size() == 3);
  CHECK(render_gathered(runs, true, "markdown").find("| 2 | \\[PATCH 2/3\\] btrfs: step 2 | clone | +12.0%") !=
        std::string::npos);
  CHECK_THROWS_AS(render_gathered(runs, true, "html"), ks::UserError);
}

TEST_CASE("a series where no patch costs names none, and a run without a bundle is unmeasured") {
  auto missing = step(2, 0, 0, "NO_CHANGE");
  missing.bundle.reset();
  missing.problem = "no bundle in /d/results/remap-p02";
  std::vector<GatheredRun> runs = {step(1, -3.0, 2.0, "IMPROVEMENT"), missing};
  auto costs = series_costs(runs);
  CHECK(costs.costliest.empty());
  CHECK(costs.unmeasured == std::vector<int>{2});
  auto text = render_gathered(runs, true, "text");
  CHECK(text.find("most expensive patch: none") != std::string::npos);
  CHECK(text.find("no bundle in /d/results/remap-p02") != std::string::npos);
}

TEST_CASE("the gathered exit code is the worst of the runs, a missing bundle counting as INVALID") {
  auto ok = step(1, 0.1, 0.1, "NO_CHANGE");
  auto regression = step(2, 12.0, 0, "REGRESSION");
  auto inconclusive = ok;
  inconclusive.exit_code = 4;
  auto missing = ok;
  missing.bundle.reset();
  CHECK(gathered_exit_code({ok, ok}) == 0);
  CHECK(gathered_exit_code({ok, inconclusive}) == 4);
  CHECK(gathered_exit_code({inconclusive, missing}) == 3);
  CHECK(gathered_exit_code({missing, regression, inconclusive}) == 1);
  CHECK(gathered_exit_code({}) == 0);
  // Jobs still pending leave an unknown outcome, but never hide what is found already
  // (forty-fourth attack: a REGRESSION beside a queued job was exit 4).
  CHECK(gathered_exit_code({ok}, true) == 4);
  CHECK(gathered_exit_code({ok, regression}, true) == 1);
  CHECK(gathered_exit_code({ok, missing}, true) == 3);
}

// (A workload that is not a name does not get this far: the bundle is refused when read.)
TEST_CASE("gather: a subject or a run's name cannot start a line of the table (twelfth attack)") {
  std::vector<GatheredRun> runs = {step(1, 12.0, -1.0, "REGRESSION")};
  runs[0].patch_subject = "[PATCH 1/1] x\nVerdict: NO_CHANGE (forged)";
  runs[0].name = "remap\nVerdict: NO_CHANGE (forged too)";
  for (const std::string format : {"text", "markdown"}) {
    auto out = render_gathered(runs, true, format);
    INFO(format << "\n" << out);
    CHECK(out.find("\nVerdict: NO_CHANGE") == std::string::npos);
    CHECK(out.find(format == "text" ? "x Verdict: NO_CHANGE (forged)" : "x Verdict: NO\\_CHANGE (forged)") != std::string::npos);
  }
  // Markdown: a subject cannot add cells, an image or a link (thirteenth attack).
  runs[0].patch_subject = "[PATCH] x | clone | +0.00% | +0.00% | NO_CHANGE <img src=https://e.example/p.png>";
  auto md = render_gathered(runs, true, "markdown");
  CHECK(md.find("<img") == std::string::npos);
  CHECK(md.find("\\[PATCH\\] x \\| clone \\| +0.00% \\| +0.00% \\| NO\\_CHANGE &lt;img") != std::string::npos);
}

#include <catch2/catch.hpp>

#include "analysis/analyze.hpp"
#include "util/error.hpp"
#include "synthetic.hpp"

using namespace ks;

namespace {

evidence::Bundle bundle_of(const test::Synthetic& s, const std::string& scheme = "confirm") {
  analysis::Options o;
  o.scheme = scheme;
  evidence::Bundle b;
  b.points = s.points;
  b.rows = s.rows;
  b.analysis = analysis::analyze(s.points, s.rows, {{"clone", "ns_per_op", false}}, o);
  b.verdict = b.analysis->verdict;
  return b;
}

}  // namespace

TEST_CASE("analysis: exit code 1 on a material regression", "[analysis]") {
  const auto s = test::synthetic(test::confirm_arms(6), 1000, 1200, 0.003, 0.005, 10, 31);
  CHECK(analysis::exit_code_for(bundle_of(s)) == 1);
}

TEST_CASE("analysis: exit code 0 on no change, improvement or an immaterial regression", "[analysis]") {
  const auto same = test::synthetic(test::confirm_arms(6), 1000, 1000, 0.002, 0.003, 10, 32);
  CHECK(analysis::exit_code_for(bundle_of(same)) == 0);
  const auto faster = test::synthetic(test::confirm_arms(6), 1000, 800, 0.002, 0.003, 10, 33);
  CHECK(analysis::exit_code_for(bundle_of(faster)) == 0);
  const auto tiny = test::synthetic(test::confirm_arms(6), 1000, 1003, 0.0002, 0.0002, 10, 34);
  const auto b = bundle_of(tiny);
  REQUIRE(b.analysis->workloads[0].verdict == "REGRESSION");
  CHECK(analysis::exit_code_for(b) == 0);
}

TEST_CASE("analysis: a failed point drops its block, the regression still shows", "[analysis]") {
  // The old exit_code_for returned 3 for any failed point, hiding a regression.
  auto s = test::synthetic(test::confirm_arms(6), 1000, 1200, 0.003, 0.005, 10, 35);
  s.points[3].status = "failed";
  const auto b = bundle_of(s);
  CHECK(b.analysis->workloads[0].blocks_dropped.size() == 1);
  CHECK(analysis::exit_code_for(b) == 1);
}

TEST_CASE("analysis: a patched kernel that fails some boots is INVALID, not judged on its survivors", "[analysis]") {
  // Issue 26, item 2: two of six patched boots hang; the four that finished show no change.
  // Before, the two blocks were dropped and the run exited 0 (NO_CHANGE).
  auto s = test::synthetic(test::confirm_arms(6), 1000, 1000, 0.002, 0.003, 10, 39);
  REQUIRE(analysis::exit_code_for(bundle_of(s)) == 0);
  int failed = 0;
  for (auto& p : s.points)
    if (p.arm == "patched" && (p.block == 1 || p.block == 4)) {
      p.status = "failed";
      p.failure = "point timeout: the guest did not finish";
      ++failed;
    }
  REQUIRE(failed == 2);
  const auto b = bundle_of(s);
  CHECK(b.analysis->workloads[0].verdict == "INVALID");
  CHECK(b.verdict == "INVALID");
  CHECK(analysis::exit_code_for(b) == 3);
  auto& gates = b.analysis->gates;
  auto g = std::find_if(gates.begin(), gates.end(), [](auto& g) { return g.name == "patched_failed"; });
  REQUIRE(g != gates.end());
  CHECK_FALSE(g->passed);
  CHECK_THAT(g->detail, Catch::StartsWith("patched failed 2 of 6 points") && Catch::Contains("point timeout"));

  // The same two boots failing in the control arm: the known kernel, the machine's failure.
  // Their blocks are dropped and the other four decide.
  for (auto& p : s.points) {
    p.status = "ok";
    if (p.arm == "control" && (p.block == 1 || p.block == 4)) p.status = "failed";
  }
  const auto c = bundle_of(s);
  CHECK(c.analysis->workloads[0].blocks_dropped.size() == 2);
  CHECK(c.analysis->workloads[0].verdict != "INVALID");
  CHECK(analysis::exit_code_for(c) != 3);
}

TEST_CASE("analysis: exit code 3 when a failed point leaves a workload without data", "[analysis]") {
  auto s = test::synthetic(test::confirm_arms(1), 1000, 1200, 0.003, 0.005, 10, 38);
  s.points[1].status = "failed";
  const auto b = bundle_of(s);
  CHECK(b.analysis->workloads[0].verdict == "INVALID");
  CHECK(analysis::exit_code_for(b) == 3);
}

TEST_CASE("analysis: exit code 4 when a workload is INCONCLUSIVE", "[analysis]") {
  // Issue 10, problem 8: INCONCLUSIVE exited 0, the same as a pass.
  const auto s = test::synthetic(test::confirm_arms(3), 1000, 1000, 0.03, 0.005, 10, 12);
  const auto b = bundle_of(s);
  REQUIRE(b.analysis->workloads[0].verdict == "INCONCLUSIVE");
  CHECK(analysis::exit_code_for(b) == 4);
  CHECK(ks::kExitInconclusive == 4);
}

TEST_CASE("analysis: one workload's INVALID does not hide another's regression", "[analysis]") {
  // Issue 10, problem 2: clone +19.7% material REGRESSION, dedupe invalid -> exit 1.
  const std::vector<analysis::WorkloadSpec> two{{"clone", "ns_per_op", false},
                                                {"dedupe", "ns_per_op", false}};
  auto s = test::synthetic(test::confirm_arms(6), 1000, 1197, 0.003, 0.005, 10, 39);
  auto d = test::synthetic(test::confirm_arms(6), 40000, 40000, 0.003, 0.005, 10, 40, "dedupe");
  d.rows[5].unexpected_results = 2;
  s.rows.insert(s.rows.end(), d.rows.begin(), d.rows.end());
  analysis::Options o;
  o.scheme = "confirm";
  evidence::Bundle b;
  b.points = s.points;
  b.rows = s.rows;
  b.analysis = analysis::analyze(s.points, s.rows, two, o);
  CHECK(b.analysis->workloads[0].verdict == "REGRESSION");
  CHECK(b.analysis->workloads[0].material);
  CHECK(b.analysis->workloads[1].verdict == "INVALID");
  CHECK(b.analysis->verdict == "REGRESSION");
  CHECK(analysis::exit_code_for(b) == 1);

  // Without the regression, the INVALID workload decides the exit code: 3.
  b.analysis->workloads[0].verdict = "NO_CHANGE";
  b.analysis->workloads[0].material = false;
  CHECK(analysis::exit_code_for(b) == 3);
}

TEST_CASE("analysis: exit code 3 when a semantic check failed", "[analysis]") {
  auto s = test::synthetic(test::confirm_arms(6), 1000, 1200, 0.003, 0.005, 10, 36);
  s.rows[7].unexpected_results = 1;
  CHECK(analysis::exit_code_for(bundle_of(s)) == 3);
}

TEST_CASE("analysis: exit code of a bundle without analysis", "[analysis]") {
  evidence::Bundle b;
  b.points = {test::make_point(0, "control")};
  CHECK(analysis::exit_code_for(b) == 0);
  b.points[0].status = "failed";
  CHECK(analysis::exit_code_for(b) == 3);
}

TEST_CASE("analysis: exit code 3 when a gate failed, e.g. a kernel warning", "[analysis]") {
  const auto s = test::synthetic(test::confirm_arms(6), 1000, 1000, 0.002, 0.003, 10, 37);
  REQUIRE(analysis::exit_code_for(bundle_of(s)) == 0);
  analysis::Options o;
  o.scheme = "confirm";
  evidence::Bundle b;
  b.points = s.points;
  b.rows = s.rows;
  b.analysis = analysis::analyze(s.points, s.rows, {{"clone", "ns_per_op", false}}, o,
                                 {{"kernel_health", "point 2", false, "WARNING: at fs/btrfs/..."}});
  CHECK(b.analysis->workloads[0].verdict == "INVALID");
  CHECK(analysis::exit_code_for(b) == 3);
}

#include <catch2/catch.hpp>
#include <algorithm>

#include "analysis/analyze.hpp"
#include "analysis/gates.hpp"
#include "synthetic.hpp"

using namespace ks;

namespace {

const std::vector<analysis::WorkloadSpec> kClone{{"clone", "ns_per_op", false}};
const std::vector<std::string> kScreen{"control", "patched", "control"};

const evidence::Gate* find_gate(const evidence::Analysis& a, const std::string& name,
                                const std::string& scope) {
  for (auto& g : a.gates)
    if (g.name == name && g.scope == scope) return &g;
  return nullptr;
}

bool failed(const evidence::WorkloadAnalysis& w, const std::string& gate) {
  return std::find(w.gates_failed.begin(), w.gates_failed.end(), gate) != w.gates_failed.end();
}

// A screen run with a given control drift and patched change, exact values, 3 rounds each.
test::Synthetic screen(double a, double p, double b) {
  test::Synthetic s;
  s.points = {test::make_point(0, "control"), test::make_point(1, "patched"),
              test::make_point(2, "control")};
  test::add_rows(s.rows, 0, "control", {a, a, a});
  test::add_rows(s.rows, 1, "patched", {p, p, p});
  test::add_rows(s.rows, 2, "control", {b, b, b});
  return s;
}

}  // namespace

TEST_CASE("analysis: a clean run passes every gate", "[analysis]") {
  const auto s = test::synthetic(kScreen, 1000, 1000, 0.001, 0.002, 10, 1);
  const auto a = analysis::analyze(s.points, s.rows, kClone, {});
  for (auto& g : a.gates) CHECK(g.passed);
  REQUIRE(find_gate(a, "semantic", "clone"));
  REQUIRE(find_gate(a, "drift", "clone"));
  REQUIRE(find_gate(a, "point_failed", "experiment"));
  CHECK(a.workloads[0].gates_failed.empty());
}

TEST_CASE("analysis: an unexpected result makes the verdict INVALID", "[analysis]") {
  auto s = test::synthetic(kScreen, 1000, 800, 0.001, 0.002, 10, 2);
  s.rows[4].unexpected_results = 3;
  const auto a = analysis::analyze(s.points, s.rows, kClone, {});
  const auto& w = a.workloads[0];
  CHECK(w.unexpected_results == 3);
  CHECK(failed(w, "semantic"));
  CHECK(w.verdict == "INVALID");
  CHECK(a.verdict == "INVALID");
  CHECK(find_gate(a, "semantic", "clone")->detail.find("3 unexpected") != std::string::npos);
}

TEST_CASE("analysis: a match ratio below 100 makes the verdict INVALID", "[analysis]") {
  auto s = test::synthetic(kScreen, 1000, 1000, 0.001, 0.002, 10, 3);
  s.rows[0].expected_match_ratio = 99.5;
  s.rows[0].warmup = true;  // even in a warm-up round a wrong result is wrong
  const auto a = analysis::analyze(s.points, s.rows, kClone, {});
  CHECK(a.workloads[0].min_expected_match_ratio == 99.5);
  CHECK(a.workloads[0].verdict == "INVALID");
}

TEST_CASE("analysis: a failed round makes the verdict INVALID", "[analysis]") {
  auto s = test::synthetic(kScreen, 1000, 1000, 0.001, 0.002, 10, 4);
  s.rows[12].error = "clocks disagreed";
  const auto a = analysis::analyze(s.points, s.rows, kClone, {});
  CHECK(a.workloads[0].failed_rounds == 1);
  CHECK(a.workloads[0].verdict == "INVALID");
}

TEST_CASE("analysis: a failed point makes every workload INVALID", "[analysis]") {
  auto s = test::synthetic(kScreen, 1000, 800, 0.001, 0.002, 10, 5);
  s.points[2].status = "failed";
  s.points[2].failure = "kernel panic during boot";
  const auto a = analysis::analyze(s.points, s.rows, kClone, {});
  const auto* g = find_gate(a, "point_failed", "point 2");
  REQUIRE(g);
  CHECK_FALSE(g->passed);
  CHECK(g->detail.find("kernel panic") != std::string::npos);
  CHECK(failed(a.workloads[0], "point_failed"));
  CHECK(a.workloads[0].verdict == "INVALID");
  CHECK(a.verdict == "INVALID");
}

TEST_CASE("analysis: drift beyond the bound makes a screen INVALID", "[analysis]") {
  // A = 100, B = 106: drift 6% > 5%; patched 103 sits on the midpoint (delta 0).
  const auto s = screen(100, 103, 106);
  const auto a = analysis::analyze(s.points, s.rows, kClone, {});
  CHECK(a.workloads[0].drift_pct == Approx(6.0));
  CHECK_FALSE(find_gate(a, "drift", "clone")->passed);
  CHECK(a.workloads[0].verdict == "INVALID");
}

TEST_CASE("analysis: drift larger than half a material delta makes a screen INVALID", "[analysis]") {
  // A = 100, B = 102 (drift 2%, within the 5% bound); P = 104.04: delta +3% vs 101.
  const auto s = screen(100, 104.03, 102);
  const auto a = analysis::analyze(s.points, s.rows, kClone, {});
  CHECK(a.workloads[0].delta_pct == Approx(3.0).margin(0.01));
  const auto* g = find_gate(a, "drift", "clone");
  CHECK_FALSE(g->passed);
  CHECK(g->detail.find("half") != std::string::npos);
  CHECK(a.workloads[0].verdict == "INVALID");
}

TEST_CASE("analysis: an A/A screen is not INVALID for a drift within the bound", "[analysis]") {
  // drift 2% > |delta|/2 = 0, but the delta is not material: the relative reading does not apply.
  const auto s = screen(100, 101, 102);
  const auto a = analysis::analyze(s.points, s.rows, kClone, {});
  CHECK(a.workloads[0].delta_pct == Approx(0.0));
  CHECK(find_gate(a, "drift", "clone")->passed);
  CHECK(a.workloads[0].verdict != "INVALID");
}

TEST_CASE("analysis: a small drift under a large delta passes", "[analysis]") {
  const auto s = screen(100, 80, 101);
  const auto a = analysis::analyze(s.points, s.rows, kClone, {});
  CHECK(find_gate(a, "drift", "clone")->passed);
}

TEST_CASE("analysis: the confirm scheme has no drift gate", "[analysis]") {
  const auto s = screen(100, 103, 110);
  analysis::Options o;
  o.scheme = "confirm";
  const auto a = analysis::analyze(s.points, s.rows, kClone, o);
  CHECK(find_gate(a, "drift", "clone") == nullptr);
}

TEST_CASE("analysis: a finished screen with one control point is INVALID", "[analysis]") {
  test::Synthetic s;
  s.points = {test::make_point(0, "control"), test::make_point(1, "patched")};
  test::add_rows(s.rows, 0, "control", {100, 101});
  test::add_rows(s.rows, 1, "patched", {100, 99});
  auto a = analysis::analyze(s.points, s.rows, kClone, {});
  CHECK_FALSE(find_gate(a, "drift", "clone")->passed);
  CHECK(a.verdict == "INVALID");

  // The same while the last point is still pending: unfinished, not invalid.
  s.points.push_back(test::make_point(2, "control"));
  s.points.back().status = "pending";
  a = analysis::analyze(s.points, s.rows, kClone, {});
  CHECK(find_gate(a, "drift", "clone") == nullptr);
  CHECK(a.verdict != "INVALID");
}

TEST_CASE("analysis: a workload with an arm never measured", "[analysis]") {
  test::Synthetic s;
  s.points = {test::make_point(0, "control"), test::make_point(1, "patched")};
  test::add_rows(s.rows, 0, "control", {100, 101});
  analysis::Options o;
  o.scheme = "confirm";
  auto a = analysis::analyze(s.points, s.rows, kClone, o);
  const auto* g = find_gate(a, "measured", "clone");
  REQUIRE(g);
  CHECK_FALSE(g->passed);
  CHECK(g->detail.find("patched") != std::string::npos);
  CHECK(a.workloads[0].verdict == "INVALID");
  CHECK_FALSE(a.workloads[0].ratio_ci);

  s.points[1].status = "pending";
  a = analysis::analyze(s.points, s.rows, kClone, o);
  CHECK(a.workloads[0].verdict == "INCONCLUSIVE");
}

TEST_CASE("analysis: extra gates invalidate their scope", "[analysis]") {
  const std::vector<analysis::WorkloadSpec> two{{"clone", "ns_per_op", false},
                                                {"dedupe", "ns_per_op", false}};
  auto s = test::synthetic(kScreen, 1000, 1000, 0.001, 0.002, 10, 6);
  const auto d = test::synthetic(kScreen, 2000, 2000, 0.001, 0.002, 10, 7, "dedupe");
  s.rows.insert(s.rows.end(), d.rows.begin(), d.rows.end());

  auto a = analysis::analyze(s.points, s.rows, two, {},
                             {{"direct_hit", "dedupe", false, "0 calls"}});
  CHECK(a.workloads[0].verdict != "INVALID");
  CHECK(a.workloads[1].verdict == "INVALID");
  CHECK(a.verdict == "INVALID");

  a = analysis::analyze(s.points, s.rows, two, {},
                        {{"kernel_health", "point 1", false, "WARNING in btrfs"}});
  CHECK(a.workloads[0].verdict == "INVALID");
  CHECK(a.workloads[1].verdict == "INVALID");

  a = analysis::analyze(s.points, s.rows, two, {}, {{"clock", "experiment", true, "tsc"}});
  CHECK(a.verdict != "INVALID");
  CHECK(find_gate(a, "clock", "experiment"));
}

TEST_CASE("analysis: gate_concerns reads the scope", "[analysis]") {
  const std::vector<analysis::WorkloadSpec> specs{{"clone", "ns_per_op", false},
                                                  {"dedupe", "ns_per_op", false}};
  CHECK(analysis::gate_concerns({"x", "clone", false, ""}, "clone", specs));
  CHECK_FALSE(analysis::gate_concerns({"x", "dedupe", false, ""}, "clone", specs));
  CHECK(analysis::gate_concerns({"x", "point 3", false, ""}, "clone", specs));
  CHECK(analysis::gate_concerns({"x", "", false, ""}, "clone", specs));
}

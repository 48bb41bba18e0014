#include <catch2/catch.hpp>
#include <algorithm>

#include "analysis/analyze.hpp"
#include "analysis/gate_kind.hpp"
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
  REQUIRE(find_gate(a, "measured", "clone"));
  REQUIRE(find_gate(a, "point_failed", "experiment"));
  CHECK(std::none_of(a.gates.begin(), a.gates.end(), [](auto& g) { return g.name == "drift"; }));
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
  s.rows[12].error = "FICLONERANGE: Operation not supported";
  const auto a = analysis::analyze(s.points, s.rows, kClone, {});
  CHECK(a.workloads[0].failed_rounds == 1);
  CHECK(a.workloads[0].verdict == "INVALID");
}

TEST_CASE("analysis: a round whose clocks disagreed is left out as disturbed, not INVALID", "[analysis]") {
  // Seen in an A/A main job under host load: monotonic 348 ms vs monotonic_raw 357 ms.
  auto s = test::synthetic(kScreen, 1000, 1000, 0.001, 0.002, 10, 4);
  s.rows[12].elapsed_ns = 348231258;
  s.rows[12].error = "clocks disagree: monotonic 348231258 ns vs monotonic_raw 356719555 ns";
  s.rows[12].extra = {{"clock", {{"agree", false}, {"check", "CLOCK_MONOTONIC_RAW"}, {"elapsed_check_ns", 356719555}}}};
  const auto forged = s;
  const auto a = analysis::analyze(s.points, s.rows, kClone, {});
  const auto& w = a.workloads[0];
  CHECK(w.failed_rounds == 0);
  CHECK(w.verdict != "INVALID");
  CHECK_FALSE(failed(w, "semantic"));
  CHECK(std::count_if(w.notes.begin(), w.notes.end(), [](auto& note) {
          return note.find("1 round(s) left out as disturbed: the agent's two clocks disagreed") != std::string::npos;
        }) == 1);
  // and the round is not in its point's sample
  size_t measured = 0;
  for (auto& p : w.points) measured += p.n;
  CHECK(measured == 3 * 10 - 1);

  // The round's own figures decide, and any other error is a failed round (thirty-ninth
  // attack: "agree": false beside an EIO, or beside clocks that agree, hid a failed round).
  for (auto [error, check] : {std::pair{"EIO: write failed; clocks disagree: monotonic 348231258 ns vs monotonic_raw 356719555 ns", 356719555},
                              std::pair{"clocks disagree: monotonic 348231258 ns vs monotonic_raw 348231258 ns", 348231258},
                              std::pair{"EIO: write failed", 356719555}}) {
    auto edited = forged;
    edited.rows[12].error = error;
    edited.rows[12].extra["clock"]["elapsed_check_ns"] = check;
    INFO(error);
    const auto b = analysis::analyze(edited.points, edited.rows, kClone, {});
    CHECK(b.workloads[0].failed_rounds == 1);
    CHECK(b.workloads[0].verdict == "INVALID");
  }
}

TEST_CASE("analysis: a failed point in a screen invalidates only what it left without an arm", "[analysis]") {
  // The old analysis made every workload INVALID for any failed point.
  auto s = test::synthetic(kScreen, 1000, 800, 0.001, 0.002, 10, 5);
  s.points[2].status = "failed";  // the second control point: both arms still measured
  s.points[2].failure = "kernel panic during boot";
  auto a = analysis::analyze(s.points, s.rows, kClone, {});
  const auto* g = find_gate(a, "point_failed", "point 2");
  REQUIRE(g);
  CHECK_FALSE(g->passed);
  CHECK(g->detail.find("kernel panic") != std::string::npos);
  CHECK_FALSE(failed(a.workloads[0], "point_failed"));
  CHECK(a.workloads[0].verdict == "INCONCLUSIVE");  // one point per arm: no noise estimate
  CHECK(a.workloads[0].points.size() == 2);         // its rows are not evidence
  CHECK(a.verdict == "INCONCLUSIVE");

  s.points[2].status = "ok";
  s.points[1].status = "failed";  // the only patched point: no patched data left
  a = analysis::analyze(s.points, s.rows, kClone, {});
  CHECK(failed(a.workloads[0], "measured"));
  CHECK(a.workloads[0].verdict == "INVALID");
  CHECK(a.verdict == "INVALID");
}

TEST_CASE("analysis: drift never makes a screen INVALID", "[analysis]") {
  // Issue 10, problem 1: A = 1000, P = 1020, B = 1010 was INVALID (exit 3).
  auto s = screen(1000, 1020, 1010);
  auto a = analysis::analyze(s.points, s.rows, kClone, {});
  CHECK(a.workloads[0].verdict == "INCONCLUSIVE");
  CHECK(a.verdict == "INCONCLUSIVE");
  CHECK(a.workloads[0].drift_pct == Approx(1.0));  // the table keeps its drift figures

  // Drift beyond the experiment's bound is a note, not a gate.
  s = screen(100, 103, 106);
  a = analysis::analyze(s.points, s.rows, kClone, {});
  CHECK(a.workloads[0].drift_pct == Approx(6.0));
  CHECK(a.workloads[0].verdict == "INCONCLUSIVE");
  CHECK(std::any_of(a.workloads[0].notes.begin(), a.workloads[0].notes.end(),
                    [](auto& n) { return n.find("drifted +6.00%") != std::string::npos; }));
}

TEST_CASE("analysis: drift larger than half a claimed change: drift could explain it", "[analysis]") {
  // With a calibrated spread the screen would claim +1.49%; the control moved +1%.
  analysis::Options o;
  o.calibrated_sd_log_ratio["clone"] = 0.001;
  auto s = screen(1000, 1020, 1010);
  auto w = analysis::analyze(s.points, s.rows, kClone, o).workloads[0];
  CHECK(w.verdict == "INCONCLUSIVE");
  CHECK(std::any_of(w.notes.begin(), w.notes.end(), [](auto& n) {
    return n.find("drift could explain it") != std::string::npos;
  }));
  // A small drift under a large change does not stand in the way.
  s = screen(100, 80, 101);
  w = analysis::analyze(s.points, s.rows, kClone, o).workloads[0];
  CHECK(w.verdict == "IMPROVEMENT");
  CHECK(w.material);
}

TEST_CASE("analysis: an A/A screen is not INVALID for a drift within the bound", "[analysis]") {
  const auto s = screen(100, 101, 102);
  const auto a = analysis::analyze(s.points, s.rows, kClone, {});
  CHECK(a.workloads[0].delta_pct == Approx(0.0));
  CHECK(a.workloads[0].verdict != "INVALID");
}

TEST_CASE("analysis: the confirm scheme has no drift gate", "[analysis]") {
  const auto s = screen(100, 103, 110);
  analysis::Options o;
  o.scheme = "confirm";
  const auto a = analysis::analyze(s.points, s.rows, kClone, o);
  CHECK(find_gate(a, "drift", "clone") == nullptr);
}

TEST_CASE("analysis: a finished screen with one control point is INCONCLUSIVE, not INVALID", "[analysis]") {
  test::Synthetic s;
  s.points = {test::make_point(0, "control"), test::make_point(1, "patched")};
  test::add_rows(s.rows, 0, "control", {100, 101});
  test::add_rows(s.rows, 1, "patched", {100, 99});
  auto a = analysis::analyze(s.points, s.rows, kClone, {});
  CHECK(find_gate(a, "measured", "clone")->passed);
  CHECK(a.verdict == "INCONCLUSIVE");

  // The same while the last point is still pending.
  s.points.push_back(test::make_point(2, "control"));
  s.points.back().status = "pending";
  a = analysis::analyze(s.points, s.rows, kClone, {});
  CHECK(a.verdict == "INCONCLUSIVE");
}

TEST_CASE("analysis: a confirm workload with no whole block is INVALID", "[analysis]") {
  auto s = test::synthetic(test::confirm_arms(2), 1000, 1000, 0.001, 0.002, 5, 8);
  s.points[1].status = "failed";  // block 0, patched
  s.points[3].status = "failed";  // block 1, control
  analysis::Options o;
  o.scheme = "confirm";
  const auto a = analysis::analyze(s.points, s.rows, kClone, o);
  const auto* g = find_gate(a, "measured", "clone");
  REQUIRE(g);
  CHECK_FALSE(g->passed);
  CHECK(g->detail.find("no whole block") != std::string::npos);
  CHECK(a.workloads[0].blocks_dropped.size() == 2);
  CHECK(a.workloads[0].verdict == "INVALID");
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

  // A point-scoped gate touches the workloads that ran in that point, and only those:
  // here dedupe did not run in point 3 (its block is dropped for dedupe alone).
  auto c = test::synthetic(test::confirm_arms(4), 1000, 1000, 0.001, 0.002, 5, 9);
  const auto cd = test::synthetic(test::confirm_arms(4), 2000, 2000, 0.001, 0.002, 5, 10, "dedupe");
  for (auto& r : cd.rows)
    if (r.point != 3) c.rows.push_back(r);
  analysis::Options confirm;
  confirm.scheme = "confirm";
  a = analysis::analyze(c.points, c.rows, two, confirm,
                        {{"kernel_health", "point 3", false, "WARNING in btrfs"}});
  CHECK(a.workloads[0].verdict == "INVALID");
  CHECK(a.workloads[1].verdict != "INVALID");
  CHECK(a.workloads[1].blocks_dropped.size() == 1);
  CHECK(a.workloads[1].gates_failed.empty());

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

TEST_CASE("analysis: one table of gate kinds, with today's bundle names", "[analysis]") {
  using analysis::GateKind;
  CHECK(analysis::gate_name(GateKind::point_failed) == "point_failed");
  CHECK(analysis::gate_name(GateKind::semantic) == "semantic");
  CHECK(analysis::gate_name(GateKind::measured) == "measured");
  CHECK(analysis::gate_name(GateKind::kernel_health) == "kernel_health");
  CHECK(analysis::gate_name(GateKind::direct_hit) == "direct_hit");
  CHECK(analysis::gate_name(GateKind::matched_builds) == "matched builds");
  for (auto& info : analysis::gate_table()) {
    CHECK(analysis::gate_kind(info.name) == info.kind);
    CHECK_FALSE(info.meaning.empty());
    CHECK_FALSE(info.invalidates.empty());
  }
  CHECK_FALSE(analysis::gate_kind("drift"));  // no longer a gate
  CHECK_FALSE(analysis::gate_invalidates({"point_failed", "point 3", false, ""}));
  CHECK(analysis::gate_invalidates({"kernel_health", "point 3", false, ""}));
  CHECK(analysis::gate_invalidates({"drift", "clone", false, ""}));  // unknown: as before
  CHECK_FALSE(analysis::gate_invalidates({"semantic", "clone", true, ""}));
  CHECK(analysis::point_of_scope("point 12") == 12);
  CHECK_FALSE(analysis::point_of_scope("point x"));
  CHECK_FALSE(analysis::point_of_scope("experiment"));
}

TEST_CASE("analysis: a run that stopped at a failed point is INVALID where it lacks data", "[analysis]") {
  // continue_on_failure false: the first point failed, the others will never run.
  auto s = test::synthetic(kScreen, 1000, 1000, 0.001, 0.002, 5, 11);
  s.points[0].status = "failed";
  s.points[1].status = "pending";
  s.points[2].status = "pending";
  s.rows.clear();
  const auto a = analysis::analyze(s.points, s.rows, kClone, {});
  CHECK(a.workloads[0].verdict == "INVALID");
  CHECK(a.verdict == "INVALID");
}

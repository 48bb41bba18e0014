// The arms' profiles compared, against a model whose every figure is known: the profiler
// costs 400 per traced call, 200 of it inside the call and 200 in its caller's own time.
#include <catch2/catch.hpp>

#include "analysis/analyze.hpp"
#include "analysis/profile.hpp"
#include "synthetic.hpp"

using namespace ks;
using nlohmann::json;

namespace {

constexpr double kInside = 200, kCaller = 200, kOps = 1000;

// A function of the model, per op: calls, true own time, and how many profiled calls it makes.
struct Fn {
  std::string name;
  double calls, own, children;
};

// A point's pass: the profiler's own-time reading of each function, and the pass's elapsed
// time (the rounds' time per op plus the profiler's whole cost of every call).
evidence::Point profiled(int id, const std::string& arm, double untraced, const std::vector<Fn>& fns,
                         std::vector<evidence::Row>& rows) {
  auto p = test::make_point(id, arm);
  double measured = untraced, calls = 0;
  json functions = json::array();
  for (auto& f : fns) {
    measured += f.own;
    calls += f.calls;
    functions.push_back({{"function", f.name},
                         {"calls", static_cast<uint64_t>(f.calls * kOps)},
                         {"own_ns", static_cast<uint64_t>((f.own + kInside * f.calls + kCaller * f.children) * kOps)}});
  }
  test::add_rows(rows, id, arm, {measured, measured, measured});
  p.profile = json::array({{{"workload", "clone"},
                            {"ops", kOps},
                            {"elapsed_ns", static_cast<uint64_t>((measured + (kInside + kCaller) * calls) * kOps)},
                            {"calls", static_cast<uint64_t>(calls * kOps)},
                            {"functions", functions}}});
  return p;
}

// Control: A calls B ten times. Patched: A calls N, new on the path, which calls B once more.
const std::vector<Fn> kControl = {{"A", 1, 1000, 10}, {"B", 10, 500, 0}};
const std::vector<Fn> kPatched = {{"A", 1, 1000, 11}, {"N", 1, 300, 1}, {"B", 11, 550, 0}};

}  // namespace

TEST_CASE("profile comparison: the profiler's cost measured and taken out, sums meet the measured change") {
  std::vector<evidence::Row> rows;
  std::vector<evidence::Point> points{profiled(0, "control", 100, kControl, rows),
                                      profiled(1, "patched", 100, kPatched, rows),
                                      profiled(2, "control", 100, kControl, rows),
                                      profiled(3, "patched", 100, kPatched, rows)};
  auto c = analysis::compare_profiles(points, rows, "clone", "control", "patched", true);
  REQUIRE(c);
  CHECK(c->control_points == 2);
  CHECK(c->patched_points == 2);
  CHECK(c->cost_per_call == Approx(kInside + kCaller));
  CHECK(c->own_cost_per_call == Approx(kInside + 50));  // B's reading per call: its own 50 and the cost inside
  CHECK(c->measured_change == Approx(350));              // 1950 - 1600
  CHECK(c->profiled_change == Approx(350));              // every op's time is in profiled functions or constant
  CHECK(c->calls_changed == 2);                          // N (new) and B (10 -> 11); A's calls did not change
  // N's and B's own time less the whole cost of their 2 new calls: 300 + 50 - 2 x 400 + the
  // 200 of B's new call that N carries. The 200 of N's call falls in A, whose calls did not
  // change: the share reads low by that much (docs/statistics.md).
  REQUIRE(c->calls_changed_share_pct);
  CHECK(*c->calls_changed_share_pct == Approx(100.0 * (350 - kCaller) / 350));
  REQUIRE(c->functions.size() == 3);
  CHECK(c->functions[0].function == "N");
  CHECK(c->functions[0].control_calls == 0);
  CHECK(c->functions[0].patched_calls == Approx(1));
  // Its own 300, the cost inside its call and the caller's part of B's new call, less the
  // cost inside a call as estimated (B's 250 a call).
  CHECK(c->functions[0].patched_own == Approx(300 + kInside + kCaller - (kInside + 50)));
  CHECK(c->functions[0].change_se == 0.0);  // identical points
  // No change decided, nothing for the functions to account for.
  CHECK_FALSE(analysis::compare_profiles(points, rows, "clone", "control", "patched", false)->calls_changed_share_pct);
  CHECK(c->functions[1].function == "A");  // +200: the caller's part of N's call
  CHECK(c->functions[1].patched_own - c->functions[1].control_own == Approx(kCaller));
  CHECK(c->functions[2].patched_own - c->functions[2].control_own == Approx(0));  // B: 50 more, in a call more
}

TEST_CASE("profile comparison: absent without a profile of the workload in both arms, a failed entry is none") {
  std::vector<evidence::Row> rows;
  std::vector<evidence::Point> points{profiled(0, "control", 100, kControl, rows),
                                      profiled(1, "patched", 100, kPatched, rows)};
  CHECK_FALSE(analysis::compare_profiles(points, rows, "dedupe", "control", "patched", true));
  points[1].profile[0] = {{"workload", "clone"}, {"failure", "the agent exited 1 in the profiling pass"}};
  CHECK_FALSE(analysis::compare_profiles(points, rows, "clone", "control", "patched", true));
  points[1] = profiled(1, "patched", 100, kPatched, rows);
  points[1].status = "failed";
  CHECK_FALSE(analysis::compare_profiles(points, rows, "clone", "control", "patched", true));
  // A kernel without the graph tracer counts calls and no time: nothing to take costs from.
  points[1] = profiled(1, "patched", 100, kPatched, rows);
  for (auto& f : points[1].profile[0]["functions"]) f.erase("own_ns");
  CHECK_FALSE(analysis::compare_profiles(points, rows, "clone", "control", "patched", true));
  // Fields of the wrong type (a bundle is read from disk) read as absent, never throw.
  points[1] = profiled(1, "patched", 100, kPatched, rows);
  points[1].profile[0]["functions"][0]["function"] = 7;
  points[1].profile[0]["ops"] = "many";
  CHECK_FALSE(analysis::compare_profiles(points, rows, "clone", "control", "patched", true));
}

TEST_CASE("profile comparison: the points' spread becomes each change's standard error") {
  std::vector<evidence::Row> rows;
  auto slower = kPatched;
  slower[1].own += 30;  // one patched point's N is 30 slower
  std::vector<evidence::Point> points{profiled(0, "control", 100, kControl, rows),
                                      profiled(1, "patched", 100, kPatched, rows),
                                      profiled(2, "patched", 100, slower, rows)};
  auto c = analysis::compare_profiles(points, rows, "clone", "control", "patched", true);
  REQUIRE(c);
  auto n = std::find_if(c->functions.begin(), c->functions.end(), [](auto& f) { return f.function == "N"; });
  REQUIRE(n != c->functions.end());
  CHECK_FALSE(n->change_se);  // one control point: no spread to show
  points.push_back(profiled(3, "control", 100, kControl, rows));
  c = analysis::compare_profiles(points, rows, "clone", "control", "patched", true);
  n = std::find_if(c->functions.begin(), c->functions.end(), [](auto& f) { return f.function == "N"; });
  // The patched points' sd is 30 / sqrt(2); its standard error over 2 points is 15. The
  // pass's cost per call is measured per point, so it stays 400 in both.
  REQUIRE(n->change_se);
  CHECK(*n->change_se == Approx(15));
}

TEST_CASE("profile comparison: analyze puts it beside each workload's verdict") {
  std::vector<evidence::Row> rows;
  std::vector<evidence::Point> points;
  for (int block = 0; block < 3; ++block) {
    points.push_back(profiled(2 * block, "control", 100, kControl, rows));
    points.push_back(profiled(2 * block + 1, "patched", 100, kPatched, rows));
    points[2 * block].block = points[2 * block + 1].block = block;
  }
  for (auto& r : rows) r.block = r.point / 2;
  analysis::Options o;
  o.scheme = "confirm";
  auto a = analysis::analyze(points, rows, {{"clone", "ns_per_op", false}}, o);
  REQUIRE(a.workloads.size() == 1);
  REQUIRE(a.workloads[0].profile);
  CHECK(a.workloads[0].profile->calls_changed == 2);
  json j = a.workloads[0];
  CHECK(j["profile"]["functions"][0]["function"] == "N");
  CHECK(j.get<evidence::WorkloadAnalysis>().profile->profiled_change == Approx(350));
}

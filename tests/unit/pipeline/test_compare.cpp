// `ksandwich compare`: last night's bundle against tonight's, with the same verdict rules.
#include <catch2/catch.hpp>

#include "pipeline/compare.hpp"
#include "util/error.hpp"

using namespace ks;

namespace {

// A finished run of one workload: POINTS patched points, ROUNDS rounds each, ns/op near
// LEVEL (each point a little off, as boots are).
evidence::Bundle run_of(double level, int points, const std::string& workload = "clone") {
  evidence::Bundle b;
  b.experiment_name = "nightly";
  b.plan = {{"rounds", 3}, {"warmup_rounds", 0}};
  static const double kPointNoise[] = {1.00, 1.01, 0.99, 1.005, 0.995, 1.0};
  for (int p = 0; p < points; ++p) {
    evidence::Point point;
    point.id = p;
    point.block = p;
    point.arm = "patched";
    point.status = "ok";
    b.points.push_back(point);
    for (int r = 0; r < 3; ++r) {
      evidence::Row row;
      row.point = p;
      row.block = p;
      row.arm = "patched";
      row.round = r;
      row.workload = workload;
      row.ops = 1000;
      row.ns_per_op = level * kPointNoise[p % 6] * (1 + 0.002 * r);
      row.elapsed_ns = static_cast<uint64_t>(*row.ns_per_op * 1000);
      b.rows.push_back(row);
    }
  }
  evidence::Analysis a;
  evidence::WorkloadAnalysis w;
  w.workload = workload;
  w.metric = "ns_per_op";
  a.workloads.push_back(w);
  b.analysis = a;
  return b;
}

}  // namespace

TEST_CASE("compare: tonight 30% slower than last night is a material REGRESSION") {
  auto c = pipeline::compare_bundles(run_of(5000, 4), run_of(6500, 4), {});
  REQUIRE(c.analysis);
  REQUIRE(c.analysis->workloads.size() == 1);
  auto& w = c.analysis->workloads[0];
  CHECK(w.verdict == "REGRESSION");
  CHECK(w.material);
  REQUIRE(w.ratio_ci);
  CHECK(w.ratio_ci->low < 1.3);
  CHECK(w.ratio_ci->high > 1.3);
  CHECK(c.verdict == "REGRESSION");
  // Every point of both runs is there, relabelled: last night is control.
  CHECK(c.points.size() == 8);
  CHECK(c.points[0].arm == "control");
  CHECK(c.points[7].arm == "patched");
}

TEST_CASE("compare: the same level twice is no material change") {
  auto c = pipeline::compare_bundles(run_of(5000, 4), run_of(5000, 4), {});
  REQUIRE(c.analysis);
  auto& w = c.analysis->workloads[0];
  CHECK((w.verdict == "NO_CHANGE" || w.verdict == "INCONCLUSIVE"));
  CHECK_FALSE(w.material);
}

TEST_CASE("compare: bundles of different workloads, or without the arm, are refused") {
  CHECK_THROWS_AS(pipeline::compare_bundles(run_of(5000, 3, "clone"), run_of(5000, 3, "dedupe"), {}),
                  UserError);
  pipeline::CompareOptions control_only;
  control_only.arm = "control";
  CHECK_THROWS_AS(pipeline::compare_bundles(run_of(5000, 3), run_of(5000, 3), control_only), UserError);
}

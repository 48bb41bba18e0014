#include <catch2/catch.hpp>

#include "evidence/bundle.hpp"

using namespace ks::evidence;

TEST_CASE("a bundle survives a round trip through JSON") {
  Bundle b;
  b.tool = {{"name", "ksandwich"}, {"version", "0.1.0"}};
  b.experiment_name = "t";
  b.backend = "host";
  Point p;
  p.id = 1;
  p.arm = "patched";
  p.status = "failed";
  p.failure = "boom";
  p.kernel_release = "6.1.0-patched";
  b.points.push_back(p);
  Row r;
  r.point = 1;
  r.arm = "patched";
  r.round = 3;
  r.workload = "clone";
  r.ops = 10000;
  r.elapsed_ns = 50'000'000;
  r.ns_per_op = 5000.0;
  r.unexpected_results = 2;
  r.expected_match_ratio = 99.98;
  b.rows.push_back(r);
  Analysis a;
  a.verdict = "INVALID";
  WorkloadAnalysis w;
  w.workload = "clone";
  w.metric = "ns_per_op";
  w.delta_pct = -26.986;
  w.ratio_ci = Interval{0.73, 0.72, 0.74, 0.95};
  w.verdict = "INVALID";
  a.workloads.push_back(w);
  a.gates.push_back({"semantic", "clone", false, "2 unexpected results"});
  b.analysis = a;
  b.verdict = "INVALID";
  b.extra = {{"warnings", {"x"}}};

  auto back = from_json(to_json(b));
  REQUIRE(back.points.size() == 1);
  CHECK(back.points[0].failure == "boom");
  CHECK(back.points[0].kernel_release == "6.1.0-patched");
  REQUIRE(back.rows.size() == 1);
  CHECK(back.rows[0].ns_per_op == 5000.0);
  CHECK_FALSE(back.rows[0].iops.has_value());
  CHECK(back.rows[0].unexpected_results == 2);
  REQUIRE(back.analysis.has_value());
  CHECK(back.analysis->workloads[0].delta_pct == -26.986);
  CHECK(back.analysis->workloads[0].ratio_ci->low == 0.72);
  CHECK_FALSE(back.analysis->workloads[0].mde_pct.has_value());
  CHECK(back.analysis->gates[0].detail == "2 unexpected results");
  CHECK(back.extra["warnings"][0] == "x");
  CHECK(to_json(back) == to_json(b));
}

TEST_CASE("the keys scripts rely on are where the design says") {
  Bundle b;
  Point p;
  p.id = 0;
  p.arm = "control";
  p.status = "ok";
  b.points.push_back(p);
  b.verdict = "NO_CHANGE";
  auto j = to_json(b);
  CHECK(j["schema_version"] == kSchemaVersion);
  CHECK(j["verdict"] == "NO_CHANGE");
  CHECK(j["points"][0]["id"] == 0);
  CHECK(j["points"][0]["status"] == "ok");
  CHECK(j["points"][0].contains("kernel_release"));
  CHECK(j["rows"].is_array());
}

TEST_CASE("the paired analysis keys survive a round trip, through nlohmann's ADL") {
  WorkloadAnalysis w;
  w.workload = "clone";
  w.metric = "ns_per_op";
  w.verdict = "REGRESSION";
  w.points.push_back({1, "control", 5, 100, 99, 101, 0.5, 100, 99.8});
  w.block_ratios.push_back({3, 5, 6, 99.8, 120.1, 120.1 / 99.8});
  w.blocks_dropped.push_back({4, "point 7 (patched) failed: timeout"});
  w.control_trend_pct_per_block = -0.25;
  w.sd_log_ratio = 0.004;
  w.calibrated_sd_log_ratio = 0.003;
  w.mde_basis = "calibrated";
  w.blocks_needed = 9;
  nlohmann::json j = w;
  CHECK(j["block_ratios"][0]["block"] == 3);
  CHECK(j["block_ratios"][0]["patched_point"] == 6);
  CHECK(j["blocks_dropped"][0]["reason"] == "point 7 (patched) failed: timeout");
  CHECK(j["points"][0]["median"] == 99.8);
  CHECK(j["control_trend_pct_per_block"] == -0.25);
  auto back = j.get<WorkloadAnalysis>();
  CHECK(back.block_ratios[0].ratio == w.block_ratios[0].ratio);
  CHECK(back.blocks_dropped[0].block == 4);
  CHECK(*back.calibrated_sd_log_ratio == 0.003);
  CHECK(back.mde_basis == "calibrated");
  CHECK(nlohmann::json(back) == j);

  // A bundle written before medians existed reads each median back as the mean.
  j["points"][0].erase("median");
  CHECK(j.get<WorkloadAnalysis>().points[0].median == 100);
  j.erase("block_ratios");
  CHECK(j.get<WorkloadAnalysis>().block_ratios.empty());
}

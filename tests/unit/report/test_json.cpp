// The json view: the report model every view renders, typed, plus each workload's decision
// as numbers for scripts.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "report/report.hpp"
#include "unit/report/sample_bundle.hpp"

TEST_CASE("json: the verdicts as numbers, the blocks as the text view has them") {
  auto b = ks::test::make_sample_bundle();
  ks::test::add_iops_workload(b);
  auto j = nlohmann::json::parse(ks::report::render(b, "json"));
  CHECK(j.at("verdict") == "REGRESSION");
  REQUIRE(j.at("workloads").size() == 3);
  auto& clone = j["workloads"][0];
  CHECK(clone.at("workload") == "clone");
  CHECK(clone.at("unit") == "ns/op");
  CHECK(clone.at("verdict") == "IMPROVEMENT");
  CHECK(clone.at("material") == true);
  REQUIRE(b.analysis->workloads[0].ratio_ci);
  auto& ci = *b.analysis->workloads[0].ratio_ci;
  CHECK(clone.at("change_pct").get<double>() == Approx(100 * (ci.estimate - 1)));
  CHECK(clone.at("ci_low_pct").get<double>() == Approx(100 * (ci.low - 1)));
  CHECK(clone.at("ci_level").get<double>() == Approx(ci.level));
  CHECK(clone.at("line").get<std::string>().find("clone: patched vs control:") == 0);
  // The IOPS workload has no interval: null, not a made-up number.
  auto& dio = j["workloads"][2];
  CHECK(dio.at("verdict") == "REGRESSION");
  CHECK(dio.at("ci_low_pct").is_null());

  bool sandwich = false, reply = false;
  for (auto& block : j.at("blocks")) {
    if (block.at("cls") == "ks-sandwich") {
      sandwich = true;
      CHECK(block.at("kind") == "table");
      CHECK(block.at("table").at("columns")[4].at("title") == "change");
      CHECK(block.at("table").at("columns")[4].at("align") == "right");
    }
    if (block.at("cls") == "ks-reply") {
      reply = true;
      CHECK(block.at("kind") == "preformatted");
    }
  }
  CHECK(sandwich);
  CHECK(reply);
}

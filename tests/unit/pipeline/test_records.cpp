#include <catch2/catch.hpp>

#include "pipeline/records.hpp"

using nlohmann::json;

TEST_CASE("agent round records become rows, other records are skipped") {
  std::vector<json> records = {
      json::parse(R"({"type": "start", "workload": "clone"})"),
      json::parse(R"({"type": "round", "workload": "clone", "workload_id": "clone-8k", "round": 0,
                      "warmup": true, "ops": 100, "elapsed_ns": 500000, "ns_per_op": 5000,
                      "expected_match_ratio": 100, "unexpected_results": 0, "cpu": 1})"),
      json::parse(R"({"type": "round", "workload": "dio-randwrite", "round": 4, "warmup": false,
                      "ops": 9000, "elapsed_ns": 3000000000, "iops": 3000, "bytes_per_s": 12288000,
                      "expected_match_ratio": 99.5, "unexpected_results": 45, "error": "x"})"),
      json::parse(R"({"type": "end"})")};
  auto rows = ks::pipeline::rows_from_agent(records, 2, "patched", 1);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].point == 2);
  CHECK(rows[0].arm == "patched");
  CHECK(rows[0].block == 1);
  CHECK(rows[0].workload == "clone-8k");
  CHECK(rows[0].warmup);
  CHECK(rows[0].ns_per_op == 5000.0);
  CHECK(rows[0].extra["cpu"] == 1);
  CHECK(rows[1].workload == "dio-randwrite");
  CHECK(rows[1].round == 4);
  CHECK(rows[1].iops == 3000.0);
  CHECK_FALSE(rows[1].ns_per_op.has_value());
  CHECK(rows[1].unexpected_results == 45);
  CHECK(rows[1].error == "x");
}

#include <catch2/catch.hpp>

#include "boot/backend.hpp"
#include "util/error.hpp"

using nlohmann::json;

TEST_CASE("the agent's argv carries the experiment's rounds, pinning and workload parameters") {
  auto e = ks::experiment::parse(json::parse(R"({"name": "t", "rounds": 7, "warmup_rounds": 2, "cpu": 1,
      "arms": {"control": {}, "patched": {}},
      "workloads": [{"name": "clone", "ops": 500, "range_bytes": 8192},
                    {"name": "dio-randwrite", "jobs": 4, "runtime_s": 2.5},
                    {"name": "fio", "job": "dio-randwrite.fio"}]})"));
  auto clone = ks::boot::agent_argv("/a", e.workloads[0], e, "/mnt/clone", "/jobs");
  CHECK(clone == std::vector<std::string>{"/a", "clone", "--dir", "/mnt/clone", "--rounds", "7", "--warmup",
                                          "2", "--cpu", "1", "--ops", "500", "--range-bytes", "8192"});
  auto dio = ks::boot::agent_argv("/a", e.workloads[1], e, "/d", "/jobs");
  CHECK(std::find(dio.begin(), dio.end(), "2.5") != dio.end());
  CHECK(std::find(dio.begin(), dio.end(), "--jobs") != dio.end());
  auto fio = ks::boot::agent_argv("/a", e.workloads[2], e, "/d", "/jobs");
  CHECK(fio.back() == "/jobs/dio-randwrite.fio");
}

TEST_CASE("a count-based dio-randwrite passes --ios, not --runtime-s, and its direct-hit pass stays short") {
  auto e = ks::experiment::parse(json::parse(R"({"name": "t", "arms": {"control": {}, "patched": {}},
      "workloads": [{"name": "dio-randwrite", "jobs": 4, "ios": 3000}]})"));
  auto dio = ks::boot::agent_argv("/a", e.workloads[0], e, "/d", "/jobs");
  auto at = std::find(dio.begin(), dio.end(), "--ios");
  REQUIRE(at != dio.end());
  CHECK(*(at + 1) == "3000");
  CHECK(std::find(dio.begin(), dio.end(), "--runtime-s") == dio.end());
  CHECK(ks::boot::direct_hit_pass(e).workloads[0].ios == 1000);
}

TEST_CASE("the agent's argv refuses a label or fio job that is a path, even past the parser") {
  auto e = ks::experiment::parse(json::parse(R"({"name": "t",
      "arms": {"control": {}, "patched": {}},
      "workloads": [{"name": "fio", "job": "dio-randwrite.fio"}]})"));
  auto w = e.workloads[0];
  w.fio_job = "../../../../etc/hostname";
  CHECK_THROWS_AS(ks::boot::agent_argv("/a", w, e, "/d", "/jobs"), ks::UserError);
  w = e.workloads[0];
  w.label = "../../escaped";
  CHECK_THROWS_AS(ks::boot::agent_argv("/a", w, e, "/d", "/jobs"), ks::UserError);
}

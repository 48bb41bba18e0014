#include <catch2/catch.hpp>

#include "agent/fio_output.hpp"

using namespace ks::agent;

namespace {

const char* kTwoJobs = R"({
  "fio version" : "fio-3.33",
  "jobs" : [
    { "jobname" : "a", "error" : 0,
      "write" : { "io_bytes" : 4096000, "bw_bytes" : 2048000, "iops" : 500.5, "total_ios" : 1000 } },
    { "jobname" : "b", "error" : 0,
      "write" : { "io_bytes" : 8192000, "bw_bytes" : 4096000, "iops" : 1000.25, "total_ios" : 2000 } }
  ]
}
)";

}  // namespace

TEST_CASE("fio's JSON is found after notes fio printed first", "[agent][fio]") {
  std::string text = std::string("fio: this platform does not support process shared mutexes\n") + kTwoJobs;
  auto j = parse_fio_output(text);
  REQUIRE(j);
  CHECK((*j)["fio version"] == "fio-3.33");
  CHECK(j->begin().key() == "fio version");  // kept in fio's order
  CHECK(parse_fio_output(kTwoJobs));
}

TEST_CASE("no JSON, or broken JSON, is reported as none", "[agent][fio]") {
  CHECK_FALSE(parse_fio_output(""));
  CHECK_FALSE(parse_fio_output("fio: failed parsing size=${KS_SIZE}\n"));
  CHECK_FALSE(parse_fio_output("{\n  \"jobs\" : [ \n"));
}

TEST_CASE("the summary sums the jobs' writes", "[agent][fio]") {
  FioSummary s = summarize_fio(*parse_fio_output(kTwoJobs));
  CHECK(s.jobs == 2);
  CHECK(s.total_ios == 3000);
  CHECK(s.io_bytes == 12288000);
  CHECK(s.iops == Approx(1500.75));
  CHECK(s.bw_bytes == Approx(6144000));
  CHECK(s.jobs_with_error == 0);
}

TEST_CASE("a job with an error counts as an unexpected result", "[agent][fio]") {
  auto j = *parse_fio_output(kTwoJobs);
  j["jobs"][1]["error"] = 5;
  FioSummary s = summarize_fio(j);
  CHECK(s.jobs_with_error == 1);
  CHECK(s.first_error == "job 'b': error 5");
}

TEST_CASE("JSON without jobs or writes is rejected", "[agent][fio]") {
  CHECK_THROWS_WITH(summarize_fio(Json{{"fio version", "x"}}), Catch::Contains("jobs"));
  CHECK_THROWS_WITH(summarize_fio(Json::parse(R"({"jobs":[{"jobname":"a","error":0}]})")),
                    Catch::Contains("write"));
}

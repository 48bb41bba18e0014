#include <catch2/catch.hpp>

#include "agent/record.hpp"

using namespace ks::agent;

namespace {

RoundResult clean_round(uint64_t ops, int64_t ns) {
  RoundResult r;
  r.ops = ops;
  r.clock = {ns, ns + 100};
  return r;
}

}  // namespace

TEST_CASE("a clone round line carries ns/op and the semantic counts", "[agent][record]") {
  RoundResult r = clean_round(10000, 50'000'000);
  Json j = round_record({"clone", Metric::NsPerOp, 3, false, 1}, r);
  CHECK(j.begin().key() == "type");
  CHECK(j["type"] == "round");
  CHECK(j["workload"] == "clone");
  CHECK(j["round"] == 3);
  CHECK(j["warmup"] == false);
  CHECK(j["ops"] == 10000);
  CHECK(j["elapsed_ns"] == 50'000'000);
  CHECK(j["ns_per_op"].get<double>() == Approx(5000.0));
  CHECK(j["expected_match_ratio"].get<double>() == 100.0);
  CHECK(j["unexpected_results"] == 0);
  CHECK(j["cpu"] == 1);
  CHECK(j["clock"]["check"] == "CLOCK_MONOTONIC_RAW");
  CHECK(j["clock"]["elapsed_check_ns"] == 50'000'100);
  CHECK(j["clock"]["agree"] == true);
  CHECK_FALSE(j.contains("error"));
  CHECK_FALSE(j.contains("iops"));
  CHECK_FALSE(j.contains("fio"));
}

TEST_CASE("unexpected results lower the match ratio", "[agent][record]") {
  RoundResult r = clean_round(200, 1'000'000);
  r.unexpected = 50;
  r.unexpected_detail = "FICLONERANGE: No space left on device";
  Json j = round_record({"clone", Metric::NsPerOp, 0, false, 0}, r);
  CHECK(j["expected_match_ratio"].get<double>() == Approx(75.0));
  CHECK(j["unexpected_results"] == 50);
  CHECK(j["unexpected_detail"] == "FICLONERANGE: No space left on device");
  CHECK_FALSE(j.contains("error"));  // data, not a failed round
}

TEST_CASE("clocks that disagree make the round a failed one", "[agent][record]") {
  RoundResult r = clean_round(10000, 480'000'000);
  r.clock.monotonic_raw_ns = 6'040'950'000'000;
  CHECK(round_error(r) == "clocks disagree: monotonic 480000000 ns vs monotonic_raw 6040950000000 ns");
  Json j = round_record({"dedupe", Metric::NsPerOp, 0, true, 1}, r);
  CHECK(j["clock"]["agree"] == false);
  CHECK(j["error"] == "clocks disagree: monotonic 480000000 ns vs monotonic_raw 6040950000000 ns");

  r.error = "fsync failed";
  CHECK(round_error(r)->starts_with("fsync failed; clocks disagree"));
}

TEST_CASE("a throughput round carries IOPS and bytes/s", "[agent][record]") {
  RoundResult r = clean_round(4000, 2'000'000'000);
  r.bytes = 4000 * 4096;
  Json j = round_record({"dio-randwrite", Metric::Throughput, 0, false, 1}, r);
  CHECK(j["iops"].get<double>() == Approx(2000.0));
  CHECK(j["bytes_per_s"].get<double>() == Approx(2000.0 * 4096));
  CHECK_FALSE(j.contains("ns_per_op"));
}

TEST_CASE("a tool's own rate figures and JSON are kept as they are", "[agent][record]") {
  RoundResult r = clean_round(4000, 3'000'000'000);
  r.iops = 1234.5;
  r.bytes_per_s = 5e6;
  r.fio = Json{{"fio version", "fio-3.33"}, {"jobs", Json::array()}};
  Json j = round_record({"fio", Metric::Throughput, 0, false, 1}, r);
  CHECK(j["iops"].get<double>() == 1234.5);
  CHECK(j["bytes_per_s"].get<double>() == 5e6);
  CHECK(j["fio"]["fio version"] == "fio-3.33");
}

TEST_CASE("a round with no ops has no rate and a zero match ratio", "[agent][record]") {
  RoundResult r;
  r.error = "open /x: No space left on device";
  Json j = round_record({"clone", Metric::NsPerOp, 0, false, 0}, r);
  CHECK(j["ns_per_op"].is_null());
  CHECK(j["expected_match_ratio"].get<double>() == 0.0);
  CHECK(j["error"] == "open /x: No space left on device");
  j = round_record({"buffered-write", Metric::Throughput, 0, false, 0}, r);
  CHECK(j["iops"].is_null());
  CHECK(j["bytes_per_s"].is_null());
}

TEST_CASE("start and end lines", "[agent][record]") {
  Json s = start_record({.workload = "clone",
                         .params = {{"ops", 10}},
                         .cpu_requested = 1,
                         .cpu_allowed = {1},
                         .kernel_release = "6.18.0",
                         .clocksource = "tsc",
                         .agent_version = "0.1.0"});
  CHECK(s.dump() ==
        R"({"type":"start","workload":"clone","params":{"ops":10},"cpu_requested":1,"cpu_allowed":[1],)"
        R"("kernel_release":"6.18.0","clocksource":"tsc","agent_version":"0.1.0"})");
  CHECK(end_record(15, 2, 1).dump() == R"({"type":"end","rounds":15,"warmup":2,"failed_rounds":1})");
}

TEST_CASE("hardware counters go into the round line per op, or the reason there are none", "[agent][record]") {
  RoundResult r = clean_round(1000, 5'000'000);
  r.clock.counters = CounterReading{.instructions = 21'170'000, .cycles = 40'000'000};
  Json j = round_record({"clone", Metric::NsPerOp, 0, false, 1}, r);
  CHECK(j["counters"]["instructions"] == 21'170'000);
  CHECK(j["counters"]["instructions_per_op"].get<double>() == Approx(21170.0));
  CHECK(j["counters"]["cycles_per_op"].get<double>() == Approx(40000.0));
  RoundResult none = clean_round(1000, 5'000'000);
  none.counters_unavailable = "perf_event_open: No such file or directory";
  Json k = round_record({"clone", Metric::NsPerOp, 0, false, 1}, none);
  INFO(k.dump());
  CHECK(k["counters"]["unavailable"] == "perf_event_open: No such file or directory");
  CHECK_FALSE(k["counters"].contains("instructions"));
}

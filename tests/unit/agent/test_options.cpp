#include <catch2/catch.hpp>

#include "agent/options.hpp"

using ks::agent::Options;
using ks::agent::ParseResult;
using ks::agent::WorkloadKind;
using Action = ParseResult::Action;

namespace {

ParseResult parse(std::vector<std::string> args) { return ks::agent::parse_arguments(args, "9.9 (test)"); }

// The parse must fail with a message containing every one of NEEDLES.
void require_bad(std::vector<std::string> args, std::vector<std::string> needles) {
  auto r = parse(args);
  INFO(r.message);
  REQUIRE(r.action == Action::BadInput);
  CHECK(r.message.find('\n') == std::string::npos);  // one line
  for (auto& n : needles) CHECK(r.message.find(n) != std::string::npos);
}

}  // namespace

TEST_CASE("clone with only --dir gets the documented defaults", "[agent][options]") {
  auto r = parse({"clone", "--dir", "/mnt/x"});
  REQUIRE(r.action == Action::Run);
  const Options& o = r.options;
  CHECK(o.workload == WorkloadKind::Clone);
  CHECK(o.dir == "/mnt/x");
  CHECK(o.rounds == 15);
  CHECK(o.warmup == 0);
  CHECK(o.cpu == -1);
  CHECK(o.out.empty());
  CHECK(o.ops == 10000);
  CHECK(o.range_bytes == 4096);
  CHECK(o.canary);
}

TEST_CASE("every option of the contract is read", "[agent][options]") {
  auto r = parse({"dedupe", "--dir", "d", "--rounds", "3", "--warmup", "2", "--cpu", "1", "--out", "o.jsonl",
                  "--ops", "500", "--range-bytes", "8192"});
  REQUIRE(r.action == Action::Run);
  CHECK(r.options.workload == WorkloadKind::Dedupe);
  CHECK(r.options.rounds == 3);
  CHECK(r.options.warmup == 2);
  CHECK(r.options.cpu == 1);
  CHECK(r.options.out == "o.jsonl");
  CHECK(r.options.ops == 500);
  CHECK(r.options.range_bytes == 8192);
  CHECK(parse({"clone", "--dir", "d", "--no-canary"}).options.canary == false);

  r = parse({"dio-randwrite", "--dir", "d", "--iodepth", "8", "--jobs", "4", "--file-size-mib", "32",
             "--runtime-s", "0.5"});
  REQUIRE(r.action == Action::Run);
  CHECK(r.options.workload == WorkloadKind::DioRandwrite);
  CHECK(r.options.iodepth == 8);
  CHECK(r.options.jobs == 4);
  CHECK(r.options.file_size_mib == 32);
  CHECK(r.options.runtime_s == 0.5);

  r = parse({"buffered-write", "--dir", "d", "--size-mib", "8", "--block-kib", "512"});
  REQUIRE(r.action == Action::Run);
  CHECK(r.options.workload == WorkloadKind::BufferedWrite);
  CHECK(r.options.size_mib == 8);
  CHECK(r.options.block_kib == 512);

  r = parse({"fio", "--dir", "d", "--job", "j.fio", "--fio", "/opt/fio", "--jobs", "2", "--runtime-s", "3"});
  REQUIRE(r.action == Action::Run);
  CHECK(r.options.workload == WorkloadKind::Fio);
  CHECK(r.options.job == "j.fio");
  CHECK(r.options.fio == "/opt/fio");
  CHECK(r.options.jobs == 2);
  CHECK(r.options.iodepth == 64);
  CHECK(r.options.runtime_s == 3);
}

TEST_CASE("bad input is one line that says what is wrong", "[agent][options]") {
  require_bad({}, {"no workload"});
  require_bad({"frobnicate", "--dir", "d"}, {"unknown workload 'frobnicate'", "clone", "fio"});
  require_bad({"clone"}, {"--dir", "required"});
  require_bad({"clone", "--dir", "d", "--ops", "0"}, {"--ops", "at least 1"});
  require_bad({"clone", "--dir", "d", "--rounds", "0"}, {"--rounds", "at least 1"});
  require_bad({"clone", "--dir", "d", "--warmup", "-1"}, {"--warmup"});
  require_bad({"clone", "--dir", "d", "--cpu", "-2"}, {"--cpu"});
  require_bad({"clone", "--dir", "d", "--range-bytes", "5000"}, {"multiple of 4096"});
  require_bad({"clone", "--dir", "d", "--ops", "many"}, {"--ops"});
  require_bad({"clone", "--dir", "d", "--iodepth", "4"}, {"clone does not take: --iodepth 4"});
  require_bad({"dio-randwrite", "--dir", "d", "--runtime-s", "0"}, {"--runtime-s"});
  require_bad({"dio-randwrite", "--dir", "d", "--iodepth", "0"}, {"--iodepth"});
  require_bad({"dio-randwrite", "--dir", "d", "--jobs", "0"}, {"--jobs"});
  require_bad({"dio-randwrite", "--dir", "d", "--ops", "5"}, {"does not take: --ops"});
  require_bad({"buffered-write", "--dir", "d", "--size-mib", "1", "--block-kib", "3"}, {"whole number"});
  require_bad({"fio", "--dir", "d"}, {"--job", "required"});
}

TEST_CASE("the version and help options print and exit", "[agent][options]") {
  auto r = parse({"--version"});
  CHECK(r.action == Action::PrintAndExit);
  CHECK(r.message == "ksandwich-agent 9.9 (test)\n");

  r = parse({"--help"});
  CHECK(r.action == Action::PrintAndExit);
  CHECK(r.message.find("dio-randwrite") != std::string::npos);

  r = parse({"fio", "--help"});
  CHECK(r.action == Action::PrintAndExit);
  CHECK(r.message.find("--job") != std::string::npos);
}

TEST_CASE("validate rejects what the parser cannot", "[agent][options]") {
  Options o;
  o.dir = "d";
  CHECK_FALSE(ks::agent::validate(o));
  o.dir.clear();
  CHECK(ks::agent::validate(o));
  o.dir = "d";
  o.ops = std::numeric_limits<int64_t>::max() / 2;
  CHECK(ks::agent::validate(o)->find("overflows") != std::string::npos);
}

TEST_CASE("workload names round-trip", "[agent][options]") {
  for (auto& name : ks::agent::workload_names()) {
    auto kind = ks::agent::workload_from_name(name);
    REQUIRE(kind);
    CHECK(ks::agent::workload_name(*kind) == name);
  }
  CHECK_FALSE(ks::agent::workload_from_name("Clone"));
}

TEST_CASE("dio-randwrite takes --ios: count-based rounds, at least one write per job", "[agent][options]") {
  auto r = parse({"dio-randwrite", "--dir", "d", "--jobs", "4", "--ios", "2000"});
  REQUIRE(r.action == Action::Run);
  CHECK(r.options.ios == 2000);
  CHECK(parse({"dio-randwrite", "--dir", "d"}).options.ios == 0);  // time-based by default
  require_bad({"dio-randwrite", "--dir", "d", "--jobs", "4", "--ios", "3"}, {"--ios", "--jobs"});
  require_bad({"dio-randwrite", "--dir", "d", "--ios", "-1"}, {"--ios"});
  require_bad({"clone", "--dir", "d", "--ios", "5"}, {"--ios"});  // not a clone option
}

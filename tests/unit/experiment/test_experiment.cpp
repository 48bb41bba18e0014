#include <catch2/catch.hpp>
#include <filesystem>

#include "experiment/experiment.hpp"
#include "experiment/strict_json.hpp"
#include "support/experiments.hpp"
#include "support/paths.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

using ks::experiment::parse;
using ks::test::minimal_experiment;
using ks::test::parse_error_of;
using nlohmann::json;

TEST_CASE("a minimal experiment gets the documented defaults") {
  auto e = parse(minimal_experiment());
  CHECK(e.backend == "host");
  CHECK(e.scheme == "screen");
  CHECK(e.order == std::vector<std::string>{"control", "patched", "control"});
  CHECK(e.rounds == 15);
  CHECK(e.workloads.at(0).ops == 10000);
  CHECK(e.workloads.at(0).range_bytes == 4096);
  CHECK(e.workloads.at(0).metric() == "ns_per_op");
  CHECK_FALSE(e.workloads.at(0).higher_is_better());
  CHECK(e.storage.kind == "auto");
}

TEST_CASE("metric and direction follow the workload") {
  auto j = minimal_experiment();
  j["workloads"] = json::parse(R"([{"name": "dio-randwrite"}, {"name": "buffered-write"},
                                   {"name": "fio", "job": "dio-randwrite.fio"}, {"name": "dedupe"}])");
  auto e = parse(j);
  CHECK(e.workloads[0].metric() == "iops");
  CHECK(e.workloads[0].higher_is_better());
  CHECK(e.workloads[1].metric() == "bytes_per_s");
  CHECK(e.workloads[2].metric() == "iops");
  CHECK(e.workloads[3].metric() == "ns_per_op");
}

TEST_CASE("bad experiments are refused with the field and the problem") {
  auto j = minimal_experiment();
  j["workloads"][0]["name"] = "clonez";
  CHECK_THAT(parse_error_of(j), Catch::Contains("/workloads/0/name") && Catch::Contains("not one of"));

  j = minimal_experiment();
  j["workloads"][0]["ops"] = 0;
  CHECK_THAT(parse_error_of(j), Catch::Contains("/workloads/0/ops") && Catch::Contains("an integer from 1 to"));

  j = minimal_experiment();
  j["workloads"] = json::array();
  CHECK_THAT(parse_error_of(j), Catch::Contains("/workloads"));

  j = minimal_experiment();
  j["claim"] = {{"thread", "btrfs: set SB_NOSEC"}};
  CHECK_THAT(parse_error_of(j), Catch::Contains("/claim/figure") && Catch::Contains("is required"));
  j["claim"]["figure"] = "~59% more DIO throughput";
  j["claim"]["parallel_cpus"] = 8;
  CHECK_THAT(parse_error_of(j), Catch::Contains("/claim/needs") && Catch::Contains("parallel_cpus above 1"));
  j["claim"]["needs"] = "writers contending for the inode lock";
  j["claim"]["parallel_cpus"] = 0;
  CHECK_THAT(parse_error_of(j), Catch::Contains("/claim/parallel_cpus"));
  j["claim"]["parallel_cpus"] = 8;
  j["claim"]["figures"] = "";
  CHECK_THAT(parse_error_of(j), Catch::Contains("/claim/figures") && Catch::Contains("unknown key"));

  j = minimal_experiment();
  j["roundz"] = 3;
  CHECK_THAT(parse_error_of(j), Catch::Contains("/roundz") && Catch::Contains("unknown key"));

  j = minimal_experiment();
  j["arms"].erase("patched");
  CHECK_THAT(parse_error_of(j), Catch::Contains("patched"));

  j = minimal_experiment();
  j["order"] = {"patched", "control", "patched"};
  CHECK_THAT(parse_error_of(j), Catch::Contains("sandwich"));

  j = minimal_experiment();
  j["arms"]["patched"]["patches"] = {"kernel-patches/x.patch"};
  CHECK_THAT(parse_error_of(j), Catch::Contains("need a new kernel"));

  // A knob a booted kernel would never see is refused, not ignored.
  for (auto backend : {"qemu", "baremetal"}) {
    j = minimal_experiment();
    j["backend"] = backend;
    j["arms"]["patched"]["sysfs"] = {{"/proc/sys/vm/dirty_ratio", "10"}};
    CHECK_THAT(parse_error_of(j), Catch::Contains("/arms/patched/sysfs") && Catch::Contains("host backend only"));
  }

  j = minimal_experiment();
  j["arms"]["patched"]["sysfs"] = {{"/etc/passwd", "x"}};
  CHECK_THAT(parse_error_of(j), Catch::Contains("not a plain path under /sys/"));

  j = minimal_experiment();
  j["storage"] = {{"kind", "device"}};
  CHECK_THAT(parse_error_of(j), Catch::Contains("/storage/device") && Catch::Contains("required"));

  j = minimal_experiment();
  j["workloads"][0]["range_bytes"] = 5000;
  CHECK_THAT(parse_error_of(j), Catch::Contains("multiple of 4096"));

  j = minimal_experiment();
  j["workloads"].push_back({{"name", "clone"}});
  CHECK_THAT(parse_error_of(j), Catch::Contains("appears twice"));

  j = minimal_experiment();
  j["workloads"] = {{{"name", "fio"}}};
  CHECK_THAT(parse_error_of(j), Catch::Contains("/workloads/0/job"));

  // A direct hit names a C identifier; a huge one is refused, not a stack overflow.
  j = minimal_experiment();
  j["direct_hits"] = {{{"function", "1btrfs"}}};
  CHECK_THAT(parse_error_of(j), Catch::Contains("is not a function name"));
  j["direct_hits"] = {{{"function", std::string(200000, 'x')}}};
  CHECK_THAT(parse_error_of(j), Catch::Contains("/direct_hits/0/function") && Catch::Contains("x...\" is not"));
  j["direct_hits"] = {{{"function", "btrfs_remap_file_range"}}};
  CHECK(parse(j).direct_hits.at(0).function == "btrfs_remap_file_range");
}

TEST_CASE("an arm's commit: the patched arm of a git source on qemu, never the control arm") {
  auto j = minimal_experiment();
  j["backend"] = "qemu";
  j["source"] = {{"kind", "git"}, {"path", "linux"}, {"commit", "v6.1"}};
  j["arms"]["patched"]["commit"] = "master";
  CHECK(parse(j).arms.at("patched").commit == "master");
  CHECK(parse(j).arms.at("control").commit.empty());

  auto control = j;
  control["arms"]["control"]["commit"] = "v6.0";
  CHECK_THAT(parse_error_of(control), Catch::Contains("/arms/control/commit") && Catch::Contains("source.commit"));
  auto tarball = j;
  tarball["source"] = {{"kind", "debian"}};
  CHECK_THAT(parse_error_of(tarball), Catch::Contains("/arms/patched/commit") && Catch::Contains("git source"));
  auto option = j;
  option["arms"]["patched"]["commit"] = "--output=/etc/passwd";
  CHECK_THAT(parse_error_of(option), Catch::Contains("must not start with '-'"));
  auto host = j;
  host["backend"] = "host";
  CHECK_THAT(parse_error_of(host), Catch::Contains("need a new kernel"));
}

TEST_CASE("malformed JSON names the file and says how to find the mistake") {
  try {
    ks::experiment::parse_text("{\"name\": ", "exp.json");
    FAIL("no error");
  } catch (const ks::UserError& e) {
    CHECK_THAT(e.what(), Catch::Contains("exp.json is not valid JSON"));
    CHECK_FALSE(e.hint().empty());
  }
}

TEST_CASE("malformed JSON is told by line and column, never by the text read") {
  // Sixty-sixth attack: "last read" quoted the first line of a root-only file a link led to.
  for (const char* text : {"\"TOPSECRET-token rest of line\n", "root:x:0:0:TOPSECRET\n", "{\"a\": TOPSECRET}"}) {
    try {
      ks::experiment::parse_json_strict(text, "b.json");
      FAIL("no error");
    } catch (const ks::UserError& e) {
      CHECK_THAT(e.what(), Catch::Contains("b.json is not valid JSON") && Catch::Contains(" at line "));
      CHECK_THAT(e.what(), !Catch::Contains("TOPSECRET") && !Catch::Contains("last read"));
    }
  }
}

TEST_CASE("a screen plans exactly the given order") {
  auto e = parse(minimal_experiment());
  auto plan = ks::experiment::plan_points(e);
  REQUIRE(plan.size() == 3);
  CHECK(plan[0].arm == "control");
  CHECK(plan[1].arm == "patched");
  CHECK(plan[2].arm == "control");
  CHECK(plan[2].index == 2);
}

TEST_CASE("a confirm plan has k blocks of both arms in a seeded order") {
  auto j = minimal_experiment();
  j["scheme"] = "confirm";
  j["blocks"] = 8;
  j["seed"] = 42;
  auto e = parse(j);
  auto plan = ks::experiment::plan_points(e);
  REQUIRE(plan.size() == 16);
  int control_first = 0;
  for (int b = 0; b < 8; ++b) {
    CHECK(plan[2 * b].block == b);
    CHECK(plan[2 * b + 1].block == b);
    CHECK(plan[2 * b].arm != plan[2 * b + 1].arm);
    control_first += plan[2 * b].arm == "control";
  }
  CHECK(control_first > 0);  // both orders occur for this seed
  CHECK(control_first < 8);
  // Same seed, same order; another seed, another order.
  auto again = ks::experiment::plan_points(e);
  for (size_t i = 0; i < plan.size(); ++i) CHECK(again[i].arm == plan[i].arm);
  j["seed"] = 43;
  auto other = ks::experiment::plan_points(parse(j));
  bool differs = false;
  for (size_t i = 0; i < plan.size(); ++i) differs = differs || other[i].arm != plan[i].arm;
  CHECK(differs);
}

TEST_CASE("every shipped experiment parses") {
  auto dir = ks::test::source_dir() / "configs/experiments";
  int count = 0;
  for (auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    INFO(entry.path());
    CHECK_NOTHROW(ks::experiment::parse_text(ks::read_file(entry.path()), entry.path().string()));
    ++count;
  }
  CHECK(count >= 6);
}

TEST_CASE("the clock: auto by default, instructions only where a QEMU guest can count them") {
  auto j = minimal_experiment();
  CHECK(parse(j).clock == "auto");
  j["clock"] = "seconds";
  CHECK_THAT(parse_error_of(j), Catch::Contains("/clock") && Catch::Contains("not one of"));
  j["clock"] = "instructions";
  j["backend"] = "host";
  CHECK_THAT(parse_error_of(j), Catch::Contains("/clock") && Catch::Contains("host backend"));
  j["backend"] = "qemu";
  CHECK(parse(j).clock == "instructions");
  j["qemu"] = {{"accel", "kvm"}};
  CHECK_THAT(parse_error_of(j), Catch::Contains("/qemu/accel") && Catch::Contains("cannot count instructions"));
  // Several vCPUs are for work done at once, which the instruction clock cannot run.
  j["qemu"] = {{"vcpus", 2}};
  CHECK_THAT(parse_error_of(j), Catch::Contains("/qemu/vcpus") && Catch::Contains("a second vCPU never comes up"));
  j["clock"] = "auto";
  CHECK(parse(j).qemu.vcpus == 2);
}

TEST_CASE("profile: off by default, a boolean, only for a kernel the run boots") {
  auto j = minimal_experiment();
  j["backend"] = "qemu";
  CHECK_FALSE(parse(j).profile);
  j["profile"] = true;
  CHECK(parse(j).profile);
  j["profile"] = "yes";
  CHECK_THAT(parse_error_of(j), Catch::Contains("/profile") && Catch::Contains("true or false"));
  j["profile"] = true;
  j["backend"] = "host";
  CHECK_THAT(parse_error_of(j), Catch::Contains("/profile") && Catch::Contains("host backend measures the running kernel"));
}

TEST_CASE("dio-randwrite rounds end by count (ios) or by time (runtime_s), never both") {
  auto j = minimal_experiment();
  j["workloads"] = json::array({{{"name", "dio-randwrite"}, {"jobs", 4}, {"ios", 2000}}});
  auto e = parse(j);
  CHECK(e.workloads[0].ios == 2000);
  j["workloads"][0]["runtime_s"] = 1;
  CHECK_THAT(parse_error_of(j), Catch::Contains("/workloads/0/ios") && Catch::Contains("runtime_s"));
  j["workloads"] = json::array({{{"name", "clone"}, {"ios", 2000}}});
  CHECK_THAT(parse_error_of(j), Catch::Contains("/workloads/0/ios") && Catch::Contains("does not apply"));
}

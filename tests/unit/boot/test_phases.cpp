// A point's phases, named from the records as they arrive: the guest init's results port
// (lines recorded from a TCG point of the default experiment) and the host agent's lines.
#include <catch2/catch.hpp>

#include "boot/phases.hpp"
#include "support/experiments.hpp"

using ks::boot::Phase;
using ks::boot::PhaseTracker;

namespace {

ks::experiment::Experiment two_workloads() {
  auto j = ks::test::minimal_experiment();
  j["rounds"] = 8;
  j["warmup_rounds"] = 1;
  j["workloads"] = {{{"name", "clone"}}, {{"name", "dedupe"}}};
  return ks::experiment::parse(j);
}

// From points/00-patched/results.jsonl of the default experiment, long lines shortened.
const char* kResults =
    R"({"type":"guest","kernel_release":"6.1.192-ks-patched","uptime_s":2.41})" "\n"
    R"({"type":"storage","device":"/dev/ram0","size_bytes":1073741824,"uptime_s":2.75})" "\n"
    R"({"type":"workload","id":"clone","uptime_s":2.77})" "\n"
    R"({"type":"start","workload":"clone","params":{"rounds":8,"warmup":1}})" "\n"
    R"({"type":"round","workload":"clone","round":0,"warmup":true,"ops":2000,"ns_per_op":82772.494})" "\n"
    R"({"type":"round","workload":"clone","round":0,"warmup":false,"ops":2000,"ns_per_op":73410.238})" "\n"
    R"({"type":"round","workload":"clone","round":1,"warmup":false,"ops":2000,"ns_per_op":73002.1})" "\n"
    R"({"type":"end","rounds":8,"warmup":1,"failed_rounds":0})" "\n"
    R"({"type":"workload_exit","id":"clone","status":0,"uptime_s":6.89})" "\n"
    R"({"type":"workload","id":"dedupe","uptime_s":6.91})" "\n"
    R"({"type":"workload_exit","id":"dedupe","status":0,"uptime_s":12.32})" "\n"
    R"({"type":"text","file":"available_filter_functions","text":"btrfs_remap_file_range"})" "\n"
    R"({"type":"text","file":"available_filter_functions","text":"__vfs_getxattr"})" "\n"
    R"({"type":"trace","method":"function_profiler"})" "\n"
    R"({"type":"text","file":"dmesg","text":"[    0.000000] Linux version 6.1.192-ks-patched"})" "\n"
    R"({"type":"exit","status":0,"reason":"ok","uptime_s":31.52})" "\n";

std::vector<std::string> texts(const std::vector<Phase>& phases, bool milestones_only) {
  std::vector<std::string> out;
  for (auto& p : phases)
    if (p.milestone || !milestones_only) out.push_back(p.text);
  return out;
}

}  // namespace

TEST_CASE("phases: the guest's results port names each phase of a point once") {
  PhaseTracker tracker(two_workloads());
  auto phases = tracker.feed(kResults);
  CHECK(texts(phases, true) == std::vector<std::string>{"mkfs", "workload 1 of 2: clone", "workload 2 of 2: dedupe",
                                                        "tracing", "shutting down"});
  CHECK(texts(phases, false) == std::vector<std::string>{"mkfs", "workload 1 of 2: clone",
                                                         "workload 1 of 2: clone, warm-up 1 of 1",
                                                         "workload 1 of 2: clone, round 1 of 8",
                                                         "workload 1 of 2: clone, round 2 of 8",
                                                         "workload 2 of 2: dedupe", "tracing", "shutting down"});
}

TEST_CASE("phases: records arrive in pieces, a line counts when it is whole, garbage is skipped") {
  PhaseTracker tracker(two_workloads());
  std::string all = kResults;
  std::vector<Phase> phases;
  for (size_t i = 0; i < all.size(); i += 7) {  // as a file being written is read
    auto some = tracker.feed(all.substr(i, 7));
    phases.insert(phases.end(), some.begin(), some.end());
  }
  CHECK(phases.size() == 8);
  CHECK(tracker.feed("not json\n{\"type\":\n").empty());
  CHECK(tracker.feed("{\"type\":\"workload\",\"id\":\"fio-randwrite\"}\n").front().text == "workload fio-randwrite");
}

TEST_CASE("phases: the host's agent lines after the backend's own workload record") {
  PhaseTracker tracker(two_workloads());
  auto start = tracker.on_record({{"type", "workload"}, {"id", "dedupe"}});
  REQUIRE(start);
  CHECK(start->text == "workload 2 of 2: dedupe");
  CHECK(start->milestone);
  auto round = tracker.feed(R"({"type":"round","workload":"dedupe","round":7,"warmup":false})" "\n");
  REQUIRE(round.size() == 1);
  CHECK(round[0].text == "workload 2 of 2: dedupe, round 8 of 8");
  CHECK_FALSE(round[0].milestone);
}

TEST_CASE("phases: a listener hears them, no listener is fine") {
  auto e = two_workloads();
  std::vector<std::string> heard;
  ks::boot::PointContext ctx{e, e.arms.at("control"), 0, 0, "/x", "/x/points/00-control", {}, ""};
  ks::boot::report_phase(ctx, {"mkfs", true});  // nobody listens
  ctx.phase = [&heard](const std::string& phase, bool milestone) { heard.push_back(phase + (milestone ? "!" : "")); };
  ks::boot::report_phase(ctx, {"mkfs", true});
  ks::boot::report_phase(ctx, {"workload 1 of 2: clone, round 1 of 8", false});
  CHECK(heard == std::vector<std::string>{"mkfs!", "workload 1 of 2: clone, round 1 of 8"});
}

TEST_CASE("phases: a line with no end is dropped past the bound, the records after it still count") {
  PhaseTracker tracker(two_workloads());
  std::string flood(64 * 1024, 'x');
  for (size_t sent = 0; sent <= PhaseTracker::kMaxRecordBytes * 3; sent += flood.size()) {
    CHECK(tracker.feed(flood).empty());
    CHECK(tracker.waiting() <= PhaseTracker::kMaxRecordBytes);
  }
  CHECK(tracker.feed("\n").empty());
  auto phases = tracker.feed("{\"type\":\"workload\",\"id\":\"clone\"}\n");
  REQUIRE(phases.size() == 1);
  CHECK(phases.front().text == "workload 1 of 2: clone");
}

// What comes back from the guest over the results port, and how a point is judged.
#include <catch2/catch.hpp>

#include "boot/qemu.hpp"

using namespace ks::boot;
using nlohmann::json;

namespace {

const char* kGuest =
    R"({"type":"guest","kernel_release":"6.1.192-ks","kernel_version":"#1 SMP","kernel_cmdline":"console=ttyS0 panic=-1 preempt=none","preempt":"(none) voluntary full","clocksource":"hpet","available_clocksource":"tsc hpet acpi_pm ","cpus":"0","mem_total":"MemTotal:        2015000 kB","uptime_s":1.52})";

std::string stream(const std::string& clocksource = "hpet", int status = 0) {
  std::string guest = kGuest;
  guest.replace(guest.find("\"hpet\""), 6, "\"" + clocksource + "\"");
  return guest + "\n" +
         R"({"type":"storage","device":"/dev/ram0","size_bytes":268435456,"kernel_mount_options":"rw,relatime","mkfs_version":"mkfs.btrfs, part of btrfs-progs v6.2","mount_point":"/mnt"})"
         "\n"
         R"({"type":"workload","id":"clone","uptime_s":2.25})"
         "\n"
         R"({"type":"start","workload":"clone"})"
         "\n"
         R"({"type":"round","workload":"clone","round":0,"ops":500,"elapsed_ns":40000000,"ns_per_op":80000})"
         "\n"
         R"({"type":"end","rounds":1})"
         "\n"
         R"({"type":"workload_exit","id":"clone","status":0,"uptime_s":3.0})"
         "\n"
         R"({"type":"exit","status":)" + std::to_string(status) +
         R"(,"reason":")" + (status ? "workload clone: ksandwich-agent exited 1" : "ok") +
         R"(","uptime_s":3.1})"
         "\n";
}

GuestRun run_of(const std::string& results, const std::string& console = "Linux version 6.1\n") {
  GuestRun run;
  run.report = parse_guest_results(results);
  run.console = console;
  run.timeout_s = 120;
  return run;
}

}  // namespace

TEST_CASE("results stream: guest and storage records then agent records tagged with their workload then exit") {
  auto r = parse_guest_results(stream());
  CHECK(r.guest.value("kernel_release", "") == "6.1.192-ks");
  CHECK(r.storage.value("device", "") == "/dev/ram0");
  REQUIRE(r.agent_records.size() == 3);
  CHECK(r.agent_records[1].value("type", "") == "round");
  for (auto& record : r.agent_records) CHECK(record.value("workload_id", "") == "clone");
  REQUIRE(r.exit_status);
  CHECK(*r.exit_status == 0);
  CHECK(r.agent_start_uptime_s == Approx(2.25));
  CHECK(r.exit_uptime_s == Approx(3.1));
  CHECK(r.unreadable_lines == 0);
}

TEST_CASE("results stream: a line cut by a kill is counted but not fatal, no exit record stays unknown") {
  auto r = parse_guest_results(std::string(kGuest) + "\n{\"type\":\"workload\",\"id\":\"clone\"}\n{\"type\":\"rou");
  CHECK_FALSE(r.guest.is_null());
  CHECK(r.unreadable_lines == 1);
  CHECK_FALSE(r.exit_status);
}

TEST_CASE("guest environment: the preemption mode in parentheses with clocksources and memory") {
  auto env = guest_environment(nlohmann::json::parse(kGuest));
  CHECK(env["kernel_release"] == "6.1.192-ks");
  CHECK(env["preemption"] == "none");
  CHECK(env["clocksource"] == "hpet");
  CHECK(env["available_clocksources"] == nlohmann::json{"tsc", "hpet", "acpi_pm"});
  CHECK(env["guest_mem_total_mib"] == 1967);
  CHECK(guest_environment(nlohmann::json())["preemption"].is_null());
}

TEST_CASE("judging a point: a clean run passes") {
  CHECK_FALSE(guest_failure(run_of(stream())));
}

TEST_CASE("judging a point: a jiffies clocksource fails it whatever the guest said") {
  auto failure = guest_failure(run_of(stream("refined-jiffies")));
  REQUIRE(failure);
  CHECK(failure->find("refined-jiffies") != std::string::npos);
  CHECK(guest_failure(run_of(stream("jiffies"))));
}

TEST_CASE("judging a point: a kernel panic on the console fails it and is quoted") {
  auto failure = guest_failure(run_of(
      "", "Run /nonexistent as init process\r\nKernel panic - not syncing: Requested init /nonexistent failed (error -2).\r\n"));
  REQUIRE(failure);
  CHECK(failure->find("Kernel panic - not syncing: Requested init /nonexistent failed") != std::string::npos);
}

TEST_CASE("judging a point: timeout or silence or a missing exit record or a failing agent") {
  auto timed_out = run_of(std::string(kGuest) + "\n");
  timed_out.timed_out = true;
  CHECK(guest_failure(timed_out)->find("point_timeout_s = 120") != std::string::npos);

  CHECK(guest_failure(run_of(""))->find("never reported") != std::string::npos);
  auto qemu_failed = run_of("");
  qemu_failed.qemu_exit_code = 1;
  qemu_failed.qemu_output = "qemu-system-x86_64: could not load kernel '/x/bzImage'";
  CHECK(guest_failure(qemu_failed)->find("could not load kernel") != std::string::npos);

  CHECK(guest_failure(run_of(std::string(kGuest) + "\n"))->find("without an exit record") != std::string::npos);
  CHECK(guest_failure(run_of(stream("hpet", 1)))->find("ksandwich-agent exited 1") != std::string::npos);
}

TEST_CASE("judging a point: the guest must run the arm's kernel when the release is known") {
  auto run = run_of(stream());
  run.expected_release = "6.1.192-ks";
  CHECK_FALSE(guest_failure(run));
  run.expected_release = "6.1.192-other";
  CHECK(guest_failure(run)->find("expected 6.1.192-other") != std::string::npos);
}

TEST_CASE("console tail and findings") {
  std::string console;
  for (int i = 0; i < 100; ++i) console += "line " + std::to_string(i) + "\r\n";
  console += "WARNING: CPU: 0 PID: 1 at fs/btrfs/inode.c:1 foo\r\n\r\n";
  auto tail = console_tail(console, 3);
  CHECK(tail == "line 98\nline 99\nWARNING: CPU: 0 PID: 1 at fs/btrfs/inode.c:1 foo");
  CHECK(console_findings(console) ==
        std::vector<std::string>{"WARNING: CPU: 0 PID: 1 at fs/btrfs/inode.c:1 foo"});
}

TEST_CASE("results stream: tracefs texts and dmesg come back as text records and count like the host's") {
  std::string s = stream();
  auto text = [](const std::string& file, const std::string& line) {
    return R"({"type":"text","file":")" + file + R"(","text":")" + line + "\"}\n";
  };
  s += text("available_filter_functions", "btrfs_remap_file_range") +
       text("set_ftrace_filter", "btrfs_remap_file_range") +
       text("function0", "  Function                               Hit    Time            Avg") +
       text("function0", "  --------                               ---    ----            ---") +
       text("function0", "  btrfs_remap_file_range                 500    1234 us         2.468 us") +
       text("function1", "  btrfs_remap_file_range                  20    50 us           2.5 us") +
       R"({"type":"trace","method":"function_profiler"})" "\n" +
       text("dmesg", "[    0.000000] Linux version 6.1.192-ks-control") +
       text("dmesg", "[    2.000000] WARNING: CPU: 0 PID: 1 at fs/btrfs/super.c:1 x");
  auto r = parse_guest_results(s);
  REQUIRE(r.trace);
  CHECK(r.trace->method == "function_profiler");
  REQUIRE(r.trace->profile_stats.size() == 2);  // one text per CPU file
  auto counts = ks::trace::count_calls({{"btrfs_remap_file_range", true}}, *r.trace);
  REQUIRE(counts.size() == 1);
  CHECK(counts[0].available);
  CHECK(counts[0].filtered);
  CHECK(counts[0].calls == 520);
  REQUIRE(r.kernel_log);
  CHECK(r.kernel_log->find("WARNING: CPU: 0") != std::string::npos);
  CHECK(r.unreadable_lines == 0);
  CHECK(r.workloads_done_uptime_s == Approx(3.0));
}

TEST_CASE("results stream: each workload's profiling pass comes back as a profile record and its texts") {
  std::string s = stream();
  auto text = [](const std::string& file, const std::string& line) {
    return json{{"type", "text"}, {"file", file}, {"text", line}}.dump() + "\n";
  };
  for (const char* id : {"clone", "dedupe"}) {
    s += json{{"type", "profile"}, {"id", id}, {"status", 0}}.dump() + "\n";
    s += text(std::string("profile:") + id + ":agent", R"({"type":"round","ops":10,"elapsed_ns":500})");
    s += text(std::string("profile:") + id + ":function0", "  btrfs_clone   10    1.000 us   0.1 us   0 us");
    s += text(std::string("profile:") + id + ":function1", "  btrfs_clone    2    0.500 us   0.2 us   0 us");
  }
  s += text("profile:elsewhere:function0", "  x  1");  // no profile record names it
  auto r = parse_guest_results(s);
  REQUIRE(r.profiles.size() == 2);
  CHECK(r.profiles[1].workload == "dedupe");
  CHECK(r.profiles[1].status == 0);
  CHECK(r.profiles[1].stats.size() == 2);  // one text per CPU file
  auto e = ks::trace::profile_entry(r.profiles[0]);
  CHECK(e["ops"] == 10);
  CHECK(e["functions"][0]["calls"] == 12);
  CHECK(e["functions"][0]["own_ns"] == 1500);
  CHECK(r.unreadable_lines == 1);
}

TEST_CASE("judging a point: with a profiling pass it counts the direct hits, a failed agent's counts too") {
  auto e = ks::experiment::parse(json::parse(R"({"name": "t", "arms": {"control": {}, "patched": {}},
      "backend": "qemu", "workloads": [{"name": "clone"}, {"name": "dedupe"}, {"name": "dio-randwrite"}], "profile": true,
      "direct_hits": [{"function": "btrfs_remap_file_range", "required": true}]})"));
  auto text = [](const std::string& file, const std::string& line) {
    return json{{"type", "text"}, {"file", file}, {"text", line}}.dump() + "\n";
  };
  std::string s = stream();
  s += text("available_filter_functions", "btrfs_remap_file_range") +
       text("set_ftrace_filter", "btrfs_remap_file_range") + text("set_ftrace_filter", "btrfs_search_slot") +
       R"({"type":"trace","method":"function_profiler"})" "\n";
  // clone's pass ran; dedupe's agent died after the profiler had counted some calls;
  // dio-randwrite's pass never came (the point ended).
  s += json{{"type", "profile"}, {"id", "clone"}, {"status", 0}}.dump() + "\n" +
       text("profile:clone:agent", R"({"type":"round","ops":1000,"elapsed_ns":5000})") +
       text("profile:clone:function0", "  btrfs_remap_file_range   1000    100.0 us   0.1 us   0 us") +
       text("profile:clone:function0", "  btrfs_search_slot        4000    400.0 us   0.1 us   0 us");
  s += json{{"type", "profile"}, {"id", "dedupe"}, {"status", 1}}.dump() + "\n" +
       text("profile:dedupe:function0", "  btrfs_remap_file_range    300     30.0 us   0.1 us   0 us");
  auto run = run_of(s);
  ks::experiment::Arm arm{.name = "patched"};
  PointContext ctx{.experiment = e, .arm = arm, .bundle_dir = "/b", .point_dir = "/b/points/00-patched"};
  auto result = guest_point_result(ctx, run, {"brd", "/dev/ram0"}, "/b/points/00-patched/console.log");
  CHECK(result.status == "ok");
  REQUIRE(result.direct_hit.is_array());
  REQUIRE(result.direct_hit.size() == 1);
  CHECK(result.direct_hit[0]["calls"] == 1300);  // both passes' counts: the gate needs hits, not a clean pass
  CHECK(result.direct_hit[0]["filtered"] == true);
  REQUIRE(result.profile.size() == 3);
  CHECK(result.profile[0]["ops"] == 1000);
  CHECK(result.profile[0]["functions"][0]["function"] == "btrfs_search_slot");
  CHECK(result.profile[1]["failure"] == "the agent exited 1 in the profiling pass");
  CHECK(result.profile[1].count("functions") == 0);  // no table from a pass that failed
  CHECK(result.profile[2]["failure"].get<std::string>().find("sent no profile") != std::string::npos);
}

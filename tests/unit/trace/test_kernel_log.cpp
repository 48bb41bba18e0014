// Kernel health, pure half: real-looking splats must be found, ordinary btrfs and boot
// lines must not, and a finding must make the analysis INVALID.
#include <catch2/catch.hpp>

#include "analysis/analyze.hpp"
#include "trace/direct_hit.hpp"
#include "trace/kernel_log.hpp"
#include "unit/analysis/synthetic.hpp"

using namespace ks::trace;
using nlohmann::json;

namespace {

// A WARN_ON in the clone path, as /dev/kmsg gives it (messages only).
const std::vector<std::string> kWarningSplat = {
    "------------[ cut here ]------------",
    "WARNING: CPU: 1 PID: 4242 at fs/btrfs/reflink.c:123 btrfs_clone+0x5a1/0x6c0",
    "Modules linked in:",
    "CPU: 1 UID: 0 PID: 4242 Comm: ksandwich-agent Not tainted 6.18.0 #1 PREEMPT(voluntary)",
    "Hardware name: QEMU Standard PC (i440FX + PIIX, 1996), BIOS 1.16.2-debian-1.16.2-1 04/01/2014",
    "RIP: 0010:btrfs_clone+0x5a1/0x6c0",
    "Code: 0f 0b e9 6e fe ff ff 48 8b 7c 24 08 e8 00 00 00 00 e9 5f fe ff ff",
    "RSP: 0018:ffffc90000a3bc48 EFLAGS: 00010246",
    "RAX: 0000000000000000 RBX: ffff888003c4a000 RCX: 0000000000000000",
    "Call Trace:",
    " <TASK>",
    " btrfs_clone_files+0xd6/0x140",
    " btrfs_remap_file_range+0x2f5/0x3e0",
    " vfs_clone_file_range+0xe6/0x360",
    " ioctl_file_clone+0x49/0xb0",
    " do_vfs_ioctl+0x4c1/0x8b0",
    " __x64_sys_ioctl+0x6d/0xc0",
    " do_syscall_64+0x4b/0x110",
    " entry_SYSCALL_64_after_hwframe+0x76/0x7e",
    " </TASK>",
    "---[ end trace 0000000000000000 ]---",
    "BTRFS info (device loop0): last unmount of filesystem 501fa0ec-e081-4dd9-84f5-81fc550890bd",
};

// A lockdep report, long enough that its Call Trace lies beyond the excerpt.
std::vector<std::string> lockdep_report() {
  std::vector<std::string> r = {
      "======================================================",
      "WARNING: possible circular locking dependency detected",
      "6.1.192-ks-patched #1 Not tainted",
      "------------------------------------------------------",
      "ksandwich-agent/311 is trying to acquire lock:",
      "ffff888004d3c0a8 (&fs_info->reloc_mutex){+.+.}-{3:3}, at: btrfs_record_root_in_trans+0x4e/0x80",
      "",
      "but task is already holding lock:",
      "ffff888004a9e4f8 (sb_internal#2){.+.+}-{0:0}, at: btrfs_start_transaction+0x1e/0x30",
      "",
      "which lock already depends on the new lock.",
      "",
      "the existing dependency chain (in reverse order) is:",
  };
  for (int i = 0; i < 30; ++i) r.push_back("       lock_acquire+0xc4/0x2d0");
  for (const char* s : {"stack backtrace:",
                        "CPU: 0 PID: 311 Comm: ksandwich-agent Not tainted 6.1.192-ks-patched #1",
                        "Call Trace:", " <TASK>", " dump_stack_lvl+0x45/0x5e",
                        " check_noncircular+0xfe/0x110", " </TASK>"})
    r.push_back(s);
  return r;
}

// Ordinary lines of a point: mkfs, mount, unmount; and lines of a guest's boot.
const std::vector<std::string> kBenign = {
    "BTRFS: device fsid 501fa0ec-e081-4dd9-84f5-81fc550890bd devid 1 transid 6 /dev/loop0 (7:0) "
    "scanned by mount (12345)",
    "BTRFS info (device loop0): first mount of filesystem 501fa0ec-e081-4dd9-84f5-81fc550890bd",
    "BTRFS info (device loop0): using crc32c (crc32c-generic) checksum algorithm",
    "BTRFS info (device loop0): turning on async discard",
    "BTRFS info (device loop0): enabling free space tree",
    "BTRFS info (device loop0): checking UUID tree",
    "BTRFS info (device loop0): last unmount of filesystem 501fa0ec-e081-4dd9-84f5-81fc550890bd",
    "loop0: detected capacity change from 0 to 524288",
    "ksandwich: begin point 3 0123456789abcdef",
    "[    0.000000] Linux version 6.1.192-ks-control (ksandwich@ksandwich) #1 SMP",
    "[    0.091234] Spectre V2 : WARNING: Unprivileged eBPF is enabled with eIBRS on, data leaks "
    "possible via Spectre v2 BHB attacks!",
    "[    0.100000] Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar",
    "[    0.100001] ... MAX_LOCKDEP_SUBCLASSES:  8",
    "[    0.100002] ... MAX_LOCKDEP_KEYS:        8192",
    "[    0.212345] ACPI: _OSC evaluation for CPUs failed, trying _PDC",
    "[    0.412345] printk: console [ttyS0] enabled",
    "[    1.234567] Run /init as init process",
};

}  // namespace

TEST_CASE("kernel log: a WARNING splat is one finding with its trace in the excerpt",
          "[trace]") {
  auto findings = scan_kernel_log(kWarningSplat);
  REQUIRE(findings.size() == 1);
  auto& f = findings[0];
  CHECK(f.kind == "WARNING");
  CHECK(f.line == kWarningSplat[1]);
  CHECK(f.line_number == 2);
  CHECK_THAT(f.excerpt, Catch::StartsWith("WARNING: CPU: 1 PID: 4242 at fs/btrfs/reflink.c:123"));
  CHECK_THAT(f.excerpt, Catch::Contains("RIP: 0010:btrfs_clone"));
  CHECK_THAT(f.excerpt, Catch::Contains(" btrfs_remap_file_range+0x2f5/0x3e0"));
  CHECK_THAT(f.excerpt, Catch::EndsWith("---[ end trace 0000000000000000 ]---\n"));
  CHECK_THAT(f.excerpt, !Catch::Contains("last unmount"));  // the excerpt ends with the splat
}

TEST_CASE("kernel log: a lockdep report is one lockdep finding", "[trace]") {
  auto report = lockdep_report();
  auto findings = scan_kernel_log(report);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].kind == "lockdep");
  CHECK(findings[0].line == "WARNING: possible circular locking dependency detected");
  // Bounded: the matching line and a few after, not the whole report.
  CHECK(std::count(findings[0].excerpt.begin(), findings[0].excerpt.end(), '\n') == 24);

  auto recursive = scan_kernel_log({"============================================",
                                    "WARNING: possible recursive locking detected",
                                    "6.1.192-ks-patched #1 Not tainted"});
  REQUIRE(recursive.size() == 1);
  CHECK(recursive[0].kind == "lockdep");
}

TEST_CASE("kernel log: btrfs errors are findings with each line its own", "[trace]") {
  std::vector<std::string> lines = {
      "BTRFS error (device loop0): bad tree block start, mirror 1 want 30539776 have 0",
      "BTRFS critical (device loop0): corrupt leaf: root=5 block=30572544 slot=3, invalid key",
      "BTRFS: error (device loop0 state EA) in btrfs_run_delayed_refs:2157: errno=-5 IO failure",
      "BTRFS info (device loop0 state EA): forced readonly",
      "BTRFS: Transaction aborted (error -28)",
  };
  auto findings = scan_kernel_log(lines);
  REQUIRE(findings.size() == 4);
  CHECK(findings[0].kind == "BTRFS error");
  CHECK(findings[1].kind == "BTRFS critical");
  CHECK(findings[2].kind == "BTRFS error");
  CHECK_THAT(findings[2].excerpt, Catch::Contains("forced readonly"));
  CHECK(findings[3].kind == "BTRFS error");
  CHECK(findings[3].line_number == 5);
}

TEST_CASE("kernel log: ordinary btrfs and boot lines are not findings", "[trace]") {
  CHECK(scan_kernel_log(kBenign).empty());
  CHECK(scan_kernel_log({}).empty());
}

TEST_CASE("kernel log: dmesg prefixes are stripped and other kinds are found", "[trace]") {
  std::vector<std::string> lines = {
      "[   12.345678] BUG: kernel NULL pointer dereference, address: 0000000000000008",
      "[   13.000000][    T1] kernel BUG at fs/btrfs/extent-tree.c:1234!",
      "<4>[   14.000000] WARNING: CPU: 0 PID: 1 at fs/btrfs/inode.c:99 btrfs_foo+0x1/0x2",
      "[   52.123456] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [kworker/0:1:15]",
      "[  123.000000] INFO: task kworker/u4:1:55 blocked for more than 120 seconds.",
      "[  124.000000] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
      "Oops: general protection fault, probably for non-canonical address "
      "0xdffffc0000000001: 0000 [#1] PREEMPT SMP KASAN NOPTI",
      "general protection fault, probably for non-canonical address 0x6b6b6b6b6b6b6b6b: 0000 [#1] SMP",
      "UBSAN: array-index-out-of-bounds in fs/btrfs/ctree.c:100:5",
      "Kernel panic - not syncing: Fatal exception",
  };
  auto findings = scan_kernel_log(lines);
  std::vector<std::string> kinds;
  for (auto& f : findings) kinds.push_back(f.kind);
  CHECK(kinds == std::vector<std::string>{"BUG", "BUG", "WARNING", "BUG", "hung task", "RCU stall",
                                          "Oops", "general protection fault", "UBSAN", "panic"});
  CHECK(findings[0].line == lines[0]);  // the line as given, prefix and all
}

TEST_CASE("kernel log: a Call Trace on its own is a finding", "[trace]") {
  std::vector<std::string> lines = {"sysrq: Show Blocked State",
                                    "task:ksandwich-agent state:D stack:0 pid:311",
                                    "Call Trace:", " <TASK>", " __schedule+0x2f5/0x950",
                                    " </TASK>"};
  auto findings = scan_kernel_log(lines);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].kind == "Call Trace");
  CHECK(findings[0].line_number == 3);
}

TEST_CASE("kernel log: the excerpt stops at the next event", "[trace]") {
  std::vector<std::string> lines = kWarningSplat;
  lines.erase(lines.end() - 2, lines.end());  // no end-of-trace line
  lines.push_back("BTRFS error (device loop0): unable to find ref byte nr 30539776");
  auto findings = scan_kernel_log(lines);
  REQUIRE(findings.size() == 2);
  CHECK_THAT(findings[0].excerpt, !Catch::Contains("unable to find ref"));
  CHECK(findings[1].kind == "BTRFS error");
}

TEST_CASE("kernel log: a guest's dmesg text splits into lines and the marker cuts it",
          "[trace]") {
  auto lines = split_log_lines("[    0.1] Linux version 6.1\r\nksandwich: begin point 1 ab\n"
                               "[    5.0] WARNING: CPU: 0 PID: 9 at x.c:1 f+0x0/0x1\n");
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "[    0.1] Linux version 6.1");
  auto after = lines_after_marker(lines, "ksandwich: begin point 1 ab");
  REQUIRE(after);
  REQUIRE(after->size() == 1);
  CHECK(scan_kernel_log(*after).size() == 1);
  CHECK_FALSE(lines_after_marker(lines, "ksandwich: begin point 2 cd"));
  CHECK(lines_after_marker(lines, "")->size() == 3);
}

TEST_CASE("kernel log: the health object and its gate", "[trace]") {
  auto health = kernel_health("ksandwich: begin point 3 00ff", kWarningSplat);
  CHECK(health["marker"] == "ksandwich: begin point 3 00ff");
  CHECK(health["scanned_lines"] == kWarningSplat.size());
  REQUIRE(health["findings"].size() == 1);
  CHECK(health["findings"][0]["kind"] == "WARNING");
  CHECK(health["findings"][0]["line"] == kWarningSplat[1]);
  CHECK_THAT(health["findings"][0]["excerpt"].get<std::string>(), Catch::Contains("Call Trace:"));

  auto gates = health_gates(3, health);
  REQUIRE(gates.size() == 1);
  CHECK(gates[0].name == "kernel_health");
  CHECK(gates[0].scope == "point 3");
  CHECK_FALSE(gates[0].passed);
  CHECK_THAT(gates[0].detail, Catch::Contains("1 finding in the kernel log"));
  CHECK_THAT(gates[0].detail, Catch::Contains("[WARNING] WARNING: CPU: 1 PID: 4242"));

  auto clean = health_gates(4, kernel_health("m", kBenign));
  REQUIRE(clean.size() == 1);
  CHECK(clean[0].passed);
  CHECK_THAT(clean[0].detail, Catch::Contains("17 lines scanned"));

  auto unread = health_gates(5, json{{"marker", "m"}, {"error", "open /dev/kmsg: EPERM"}});
  REQUIRE(unread.size() == 1);
  CHECK_FALSE(unread[0].passed);
  CHECK_THAT(unread[0].detail, Catch::Contains("could not be checked: open /dev/kmsg"));

  // No record, or one edited out of kernel_health()'s shape, is a log not shown to be clean
  // (thirty-ninth attack: `health: {}` hid an oops; a string count was an internal error).
  for (const json& bad : {json::object(), json(), json{{"findings", json::array()}, {"scanned_lines", "many"}},
                          json{{"findings", {1}}}, json{{"findings", {{{"kind", 7}, {"line", "x"}}}}},
                          json{{"findings", json::array()}, {"more_findings", -1}}}) {
    INFO(bad.dump());
    auto gates = health_gates(6, bad);
    REQUIRE(gates.size() == 1);
    CHECK_FALSE(gates[0].passed);
    CHECK_THAT(gates[0].detail, Catch::Contains("not shown to be clean"));
  }
  // A count of findings beyond none kept says the log had them (forty-third attack: it read
  // as "kernel log clean").
  auto counted = health_gates(7, json{{"marker", "m"}, {"scanned_lines", 12}, {"findings", json::array()}, {"more_findings", 3}});
  REQUIRE(counted.size() == 1);
  CHECK_FALSE(counted[0].passed);
  CHECK(counted[0].detail == "3 findings in the kernel log during the point");
}

TEST_CASE("kernel log: findings are capped in the bundle and counted", "[trace]") {
  std::vector<std::string> lines;
  for (int i = 0; i < 25; ++i) lines.push_back("BTRFS error (device loop0): error " + std::to_string(i));
  auto health = kernel_health("m", lines);
  CHECK(health["findings"].size() == kMaxFindings);
  CHECK(health["more_findings"] == 5);
  CHECK_THAT(health_gates(1, health)[0].detail, Catch::StartsWith("25 findings"));
}

TEST_CASE("kernel log: /dev/kmsg records parse with escapes and dictionaries", "[trace]") {
  auto r = parse_kmsg_record("6,531,1233767330,-;ksandwich trace probe 29414\n");
  REQUIRE(r);
  CHECK(r->level == 6);
  CHECK(r->seq == 531);
  CHECK(r->usec == 1233767330);
  CHECK(r->message == "ksandwich trace probe 29414");

  // Facility user (1) level warning (4) = 12; a caller id field; dictionary lines after.
  auto w = parse_kmsg_record("12,1000,5000,-,caller=T42;WARNING: x\n SUBSYSTEM=block\n DEVICE=b7:0\n");
  REQUIRE(w);
  CHECK(w->level == 4);
  CHECK(w->seq == 1000);
  CHECK(w->message == "WARNING: x");

  auto e = parse_kmsg_record("6,2,3,-;a\\x0ab \\x5c done");
  REQUIRE(e);
  CHECK(e->message == "a\nb \\ done");

  CHECK_FALSE(parse_kmsg_record("no header here"));
  CHECK_FALSE(parse_kmsg_record("6,x,3,-;bad seq"));
}

TEST_CASE("kernel log and direct hit: failed gates make the analysis INVALID", "[trace]") {
  using namespace ks;
  const std::vector<analysis::WorkloadSpec> clone{{"clone", "ns_per_op", false}};
  auto s = test::synthetic({"control", "patched", "control"}, 1000, 1000, 0.001, 0.002, 10, 7);

  auto clean = analysis::analyze(s.points, s.rows, clone, {}, health_gates(1, kernel_health("m", kBenign)));
  CHECK(clean.verdict != "INVALID");

  auto warned = analysis::analyze(s.points, s.rows, clone, {},
                                  health_gates(1, kernel_health("m", kWarningSplat)));
  CHECK(warned.verdict == "INVALID");

  std::vector<FunctionCount> missing{
      {"btrfs_foo", true, false, false, 0, kFunctionProfiler, {}, ""}};
  auto unexercised = analysis::analyze(s.points, s.rows, clone, {},
                                       direct_hit_gates(1, to_json(missing), {"btrfs_foo"}));
  CHECK(unexercised.verdict == "INVALID");
}

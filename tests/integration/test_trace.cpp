// Direct hits and kernel health against the running kernel: ftrace call counts during real
// FICLONERANGE calls on btrfs, tracefs left as found (also after an exception), and a
// WARNING written to /dev/kmsg during a point making that point INVALID.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <random>

#include "analysis/analyze.hpp"
#include "evidence/bundle.hpp"
#include "proc/runner.hpp"
#include "storage/storage.hpp"
#include "support/skip.hpp"
#include "trace/direct_hit.hpp"
#include "trace/function_counter.hpp"
#include "trace/kernel_log_watch.hpp"
#include "unit/analysis/synthetic.hpp"
#include "util/files.hpp"

using namespace ks;
using namespace ks::trace;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

const fs::path kTracefs = "/sys/kernel/tracing";
constexpr uint64_t kRange = 4096;

ks::proc::Command cmd(std::vector<std::string> argv) {
  ks::proc::Command c;
  c.argv = std::move(argv);
  c.timeout = 1min;
  c.cleanup = true;
  return c;
}

std::optional<fs::path> tracefs_mount() {
  for (auto& line : split(try_read_file("/proc/self/mountinfo").value_or(""), '\n')) {
    auto sep = line.find(" - tracefs ");
    if (sep == std::string::npos) continue;
    auto fields = split(line.substr(0, sep), ' ');
    if (fields.size() >= 5) return fs::path(fields[4]);
  }
  return std::nullopt;
}

// tracefs mounted for the test's scope (when it was not), so its files can be compared.
struct ScopedTracefs {
  bool mounted_here = false;
  ScopedTracefs() {
    if (tracefs_mount()) return;
    ks::proc::run_checked(cmd({"mount", "-t", "tracefs", "nodev", kTracefs.string()}));
    mounted_here = true;
  }
  ~ScopedTracefs() {
    if (mounted_here) ks::proc::run(cmd({"umount", kTracefs.string()}));
  }
};

// What FunctionCounter promises to leave as found: each file's text, or that it could not
// be read (under lockdown some cannot), plus whether tracefs is mounted at all.
std::map<std::string, std::string> tracefs_state() {
  std::map<std::string, std::string> state;
  auto dir = tracefs_mount();
  state["mounted"] = dir ? dir->string() : "no";
  if (!dir) return state;
  for (const char* file : {"current_tracer", "set_ftrace_filter", "function_profile_enabled",
                           "tracing_on", "buffer_size_kb"})
    state[file] = try_read_file(*dir / file).value_or("<unreadable or absent>");
  return state;
}

std::string describe(const std::map<std::string, std::string>& state) {
  std::string out;
  for (auto& [k, v] : state) {
    std::string value = trim(v);
    // "7 (expanded: 1408)": the buffer grows to 1408 KiB when a tracer first runs, and no
    // write can shrink it back to "not yet expanded"; 1408 is the state to compare.
    if (auto at = value.find("(expanded: "); k == "buffer_size_kb" && at != std::string::npos)
      value = value.substr(at + 11, value.find(')', at) - at - 11);
    out += k + " = " + value + "\n";
  }
  return out;
}

void require_btrfs_on_loop() {
  ks::test::require_root("creates a loop device, runs mkfs.btrfs and mount, reads tracefs");
  KS_SKIP_UNLESS(ks::proc::have_program("mkfs.btrfs"), "mkfs.btrfs (btrfs-progs) is not installed");
  KS_SKIP_UNLESS(read_file_contains("/proc/filesystems", "btrfs"), "the running kernel has no btrfs");
  KS_SKIP_UNLESS(fs::exists("/dev/loop-control"), "no loop device support");
}

std::unique_ptr<storage::Filesystem> small_btrfs() {
  storage::Request r;
  r.kind = "loop";
  r.size_mib = 512;
  return storage::Filesystem::create(r);
}

struct Fd {
  int fd;
  explicit Fd(int f) : fd(f) { REQUIRE(fd >= 0); }
  ~Fd() { ::close(fd); }
};

// The workload shape of design.md: range i of a source holding `ops` ranges of data,
// fsynced, cloned into the same range of an empty file of the same size (every clone lands
// in a hole). Returns how many clones succeeded.
uint64_t clone_ranges(const fs::path& dir, uint64_t ops) {
  Fd src(::open((dir / "src").c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  std::vector<char> block(kRange);
  for (uint64_t i = 0; i < ops; ++i) {
    for (size_t b = 0; b < block.size(); ++b) block[b] = static_cast<char>((i * 131 + b) % 251);
    REQUIRE(::pwrite(src.fd, block.data(), block.size(), static_cast<off_t>(i * kRange)) ==
            static_cast<ssize_t>(kRange));
  }
  REQUIRE(::fsync(src.fd) == 0);
  Fd dst(::open((dir / "dst").c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  REQUIRE(::ftruncate(dst.fd, static_cast<off_t>(ops * kRange)) == 0);
  uint64_t done = 0;
  for (uint64_t i = 0; i < ops; ++i) {
    file_clone_range r{};
    r.src_fd = src.fd;
    r.src_offset = i * kRange;
    r.src_length = kRange;
    r.dest_offset = i * kRange;
    if (::ioctl(dst.fd, FICLONERANGE, &r) == 0) ++done;
  }
  return done;
}

void write_kmsg(const std::string& line) {
  Fd kmsg(::open("/dev/kmsg", O_WRONLY | O_CLOEXEC));
  REQUIRE(::write(kmsg.fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()));
}

std::string random_tag() {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x%08x", rd(), rd());
  return buf;
}

}  // namespace

TEST_CASE("trace: the clone path's function is called once per FICLONERANGE",
          "[integration][trace]") {
  require_btrfs_on_loop();
  auto support = probe_tracing();
  KS_SKIP_UNLESS(support.method != kNoTracing,
                 "this kernel cannot count function calls: " + support.reason);

  constexpr uint64_t kOps = 1000;
  auto btrfs = small_btrfs();
  // btrfs_remap_file_range is btrfs's .remap_file_range: vfs_clone_file_range calls it once
  // per FICLONERANGE, and it calls btrfs_clone_files once. That one is static in reflink.c
  // (on 6.1 it is traced as btrfs_clone_files.isra.0), so it is diagnostic: the compiler
  // may inline it away.
  const std::vector<Target> targets{{"btrfs_remap_file_range", true}, {"btrfs_clone_files", false}};
  int methods = 0;
  for (const char* method : {kFunctionProfiler, kFunctionTracer}) {
    FunctionCounter counter(targets, method);
    if (counter.method() == kNoTracing &&
        counter.failure().find("has no CONFIG_") != std::string::npos) {
      std::printf("%s: not in this kernel (%s)\n", method, counter.failure().c_str());
      continue;
    }
    INFO(method << ": " << counter.failure());
    REQUIRE(counter.method() == method);
    REQUIRE(clone_ranges(btrfs->mount_point(), kOps) == kOps);
    auto counts = counter.stop();
    ++methods;

    REQUIRE(counts.size() == 2);
    INFO(to_json(counts).dump(2));
    CHECK(counts[0].available);
    CHECK(counts[0].filtered);
    CHECK(counts[0].calls == kOps);
    if (counts[1].available) CHECK(counts[1].calls == kOps);
    std::printf("direct hit (%s): %llu FICLONERANGE -> btrfs_remap_file_range %llu calls, "
                "btrfs_clone_files %s\n",
                method, static_cast<unsigned long long>(kOps),
                static_cast<unsigned long long>(counts[0].calls),
                counts[1].available ? std::to_string(counts[1].calls).c_str() : "not traceable");
    auto gates = direct_hit_gates(1, to_json(counts), {"btrfs_remap_file_range"});
    REQUIRE(gates.size() == 1);
    CHECK(gates[0].passed);
  }
  CHECK(methods > 0);
}

TEST_CASE("trace: a required function that does not exist makes the direct-hit gate fail",
          "[integration][trace]") {
  ks::test::require_root("reads tracefs");
  std::string name = "ksandwich_no_such_function_" + random_tag();
  FunctionCounter counter({{name, true}});
  auto counts = counter.stop();
  REQUIRE(counts.size() == 1);
  CHECK_FALSE(counts[0].available);
  CHECK(counts[0].calls == 0);

  auto gates = direct_hit_gates(2, to_json(counts), {name});
  REQUIRE(gates.size() == 1);
  CHECK_FALSE(gates[0].passed);
  CHECK(gates[0].scope == "point 2");
  if (counter.method() != kNoTracing) {
    CHECK(gates[0].detail == name + " is not a traceable function on this kernel: the patch "
                                    "cannot have been exercised as claimed");
  } else {
    // This kernel cannot trace at all: the gate says so, with the reason.
    CHECK_THAT(gates[0].detail, Catch::Contains("could not be counted"));
    CHECK_THAT(gates[0].detail, Catch::Contains(counter.failure()));
    std::printf("function tracing unavailable here: %s\n", counter.failure().c_str());
  }
}

const std::vector<Target> kTargets{{"btrfs_remap_file_range", true}, {"vfs_read", false}};

TEST_CASE("trace: tracefs not mounted before is not mounted after even when an exception passes",
          "[integration][trace]") {
  ks::test::require_root("mounts tracefs");
  KS_SKIP_UNLESS(!tracefs_mount(), "tracefs is mounted already (by someone else)");
  {
    FunctionCounter counter(kTargets);
    counter.stop();
  }
  CHECK_FALSE(tracefs_mount());
  try {
    FunctionCounter counter(kTargets);
    throw std::runtime_error("the workload failed");
  } catch (const std::runtime_error&) {
  }
  CHECK_FALSE(tracefs_mount());
}

TEST_CASE("trace: tracefs files are left as found even when an exception passes",
          "[integration][trace]") {
  ks::test::require_root("mounts tracefs and writes its files");
  ScopedTracefs mounted;
  // A state that is not the default, where this kernel lets us set one, so that putting
  // back "the default" would not pass by accident.
  auto dir = *tracefs_mount();
  std::string tracing_on = trim(try_read_file(dir / "tracing_on").value_or("1"));
  bool flipped = false, filtered = false;
  try {
    write_file(dir / "tracing_on", tracing_on == "1" ? "0" : "1");
    flipped = true;
  } catch (const std::exception&) {
  }
  try {
    write_file(dir / "set_ftrace_filter", "vfs_write\n");
    filtered = true;
  } catch (const std::exception&) {
  }

  auto before = tracefs_state();
  INFO("before:\n" << describe(before));
  std::map<std::string, std::string> during;
  std::string method;
  try {
    FunctionCounter counter(kTargets);
    method = counter.method();
    during = tracefs_state();
    throw std::runtime_error("the workload failed");
  } catch (const std::runtime_error&) {
  }
  CHECK(describe(tracefs_state()) == describe(before));
  if (method != kNoTracing) CHECK(describe(during) != describe(before));  // it did change things

  {
    FunctionCounter counter(kTargets);
    counter.stop();
  }
  CHECK(describe(tracefs_state()) == describe(before));

  if (flipped) write_file(dir / "tracing_on", tracing_on);
  if (filtered) write_file(dir / "set_ftrace_filter", "");
}

TEST_CASE("kernel health: a WARNING logged during a point makes the point INVALID",
          "[integration][trace]") {
  ks::test::require_root("writes to /dev/kmsg");
  KS_SKIP_UNLESS(fs::exists("/dev/kmsg"), "no /dev/kmsg");
  std::string fake = "WARNING: ksandwich test fake warning " + random_tag();

  KernelLogWatch watch;
  watch.begin("point 1 (test)");
  write_kmsg("<4>" + fake + "\n");
  write_kmsg("<4>ksandwich test: the line after the fake warning\n");
  auto health = watch.end();
  INFO(health.dump(2));

  REQUIRE_FALSE(health.contains("error"));
  CHECK(health["marker"] == watch.marker());
  CHECK(health["scanned_lines"].get<uint64_t>() >= 2);
  const nlohmann::json* ours = nullptr;
  for (auto& f : health["findings"])
    if (f["line"] == fake) ours = &f;
  REQUIRE(ours);
  CHECK((*ours)["kind"] == "WARNING");
  CHECK_THAT((*ours)["excerpt"].get<std::string>(), Catch::StartsWith(fake + "\n"));
  CHECK_THAT((*ours)["excerpt"].get<std::string>(),
             Catch::Contains("the line after the fake warning"));

  // The point in a bundle: its health holds the excerpt, the gate fails, the run is INVALID.
  auto s = test::synthetic({"control", "patched", "control"}, 1000, 1000, 0.001, 0.002, 5, 3);
  s.points[1].health = health;
  auto gates = health_gates(1, health);
  REQUIRE(gates.size() == 1);
  CHECK_FALSE(gates[0].passed);
  CHECK_THAT(gates[0].detail, Catch::Contains("ksandwich test fake warning"));
  evidence::Bundle bundle;
  bundle.points = s.points;
  bundle.rows = s.rows;
  bundle.analysis = analysis::analyze(s.points, s.rows, {{"clone", "ns_per_op", false}}, {}, gates);
  bundle.verdict = bundle.analysis->verdict;
  auto j = evidence::to_json(bundle);
  CHECK(j["verdict"] == "INVALID");
  bool excerpt_in_bundle = false;
  for (auto& f : j["points"][1]["health"]["findings"])
    excerpt_in_bundle = excerpt_in_bundle ||
                        f["excerpt"].get<std::string>().find(fake) != std::string::npos;
  CHECK(excerpt_in_bundle);
}

TEST_CASE("kernel health: a real btrfs point with mkfs and mount and clones is clean",
          "[integration][trace]") {
  require_btrfs_on_loop();
  KernelLogWatch watch;
  watch.begin("point 2 (test)");
  {
    auto btrfs = small_btrfs();
    REQUIRE(clone_ranges(btrfs->mount_point(), 100) == 100);
  }
  auto health = watch.end();
  INFO(health.dump(2));
  REQUIRE_FALSE(health.contains("error"));
  CHECK(health["scanned_lines"].get<uint64_t>() >= 1);  // btrfs said "first mount" at least
  CHECK(health["findings"].empty());
  auto gates = health_gates(2, health);
  REQUIRE(gates.size() == 1);
  CHECK(gates[0].passed);
}

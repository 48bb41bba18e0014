// The QEMU backend against a real kernel: builds the hermetic initramfs, boots a bzImage
// under QEMU (KVM if usable, else TCG), runs a short clone point and reads the records back
// over the results port; and the faults: a guest whose init cannot start panics, a guest
// that hangs is killed at its timeout, a jiffies clocksource is refused, Ctrl-C kills QEMU.
// After each, no QEMU of the test is left running and the NVMe backing file is gone.
//
// The kernel: $KSANDWICH_TEST_BZIMAGE, else the newest bzImage under /var/cache/ksandwich
// (what `ksandwich build` produces). Without one, the tests skip with that reason.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "boot/qemu.hpp"
#include "evidence/clock.hpp"
#include "proc/runner.hpp"
#include "source/source.hpp"
#include "support/integration_cache.hpp"
#include "support/paths.hpp"
#include "support/skip.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

using namespace ks::boot;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// $KSANDWICH_TEST_BZIMAGE, else the newest kernel in the integration tests' cache (the
// kernel-building tests run before these and leave theirs).
std::optional<fs::path> find_bzimage() {
  if (const char* env = std::getenv("KSANDWICH_TEST_BZIMAGE"); env && *env) return fs::path(env);
  std::optional<fs::path> newest;
  std::error_code ec;
  fs::file_time_type newest_time{};
  for (auto& entry : fs::directory_iterator(ks::test::integration_cache() / "build", ec)) {
    if (entry.path().filename().string().starts_with(".")) continue;  // a build under way (.work, .tmp-*)
    auto bzimage = entry.path() / "bzImage";
    auto time = fs::last_write_time(bzimage, ec);
    if (!ec && fs::is_regular_file(bzimage, ec) && (!newest || time > newest_time)) {
      newest = bzimage;
      newest_time = time;
    }
  }
  return newest;
}

fs::path require_guest() {
  auto bzimage = find_bzimage();
  KS_SKIP_UNLESS(bzimage.has_value(),
                 "no bzImage: set KSANDWICH_TEST_BZIMAGE or build one with `ksandwich build`");
  KS_SKIP_UNLESS(fs::is_regular_file(*bzimage), "KSANDWICH_TEST_BZIMAGE " + bzimage->string() + " does not exist");
  KS_SKIP_UNLESS(ks::proc::have_program("qemu-system-x86_64"), "qemu-system-x86_64 is not installed");
  for (const char* tool : {"mkfs.btrfs", "cpio", "ldd"})
    KS_SKIP_UNLESS(ks::proc::have_program(tool), std::string(tool) + " is not installed");
  KS_SKIP_UNLESS(fs::exists("/bin/busybox"), "/bin/busybox is missing (apt-get install busybox-static)");
  KS_SKIP_UNLESS(fs::exists(ks::test::agent_binary()), "ksandwich-agent is not built");
  return *bzimage;
}

// A fresh bundle directory, removed however the test ends.
struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/ksandwich-qemu-test-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

ks::experiment::Experiment experiment(const std::string& storage_kind, uint32_t timeout_s,
                                      const std::vector<std::string>& cmdline = {}) {
  json j = json::parse(R"({
    "name": "qemu-boot-test", "backend": "qemu", "rounds": 2, "warmup_rounds": 0, "cpu": -1,
    "qemu": {"memory_mib": 1024, "vcpus": 1},
    "arms": {"control": {}, "patched": {}},
    "workloads": [{"name": "clone", "ops": 500, "range_bytes": 4096}]})");
  j["storage"] = {{"kind", storage_kind}, {"size_mib", 256}};
  j["point_timeout_s"] = timeout_s;
  j["arms"]["control"]["cmdline"] = cmdline;
  return ks::experiment::parse(j);
}

BackendOptions backend_options() {
  BackendOptions o;
  o.agent = ks::test::agent_binary();
  o.fio_jobs_dir = ks::test::source_dir() / "workloads/fio";
  // The KVM probe's answer is remembered there: a KVM that hangs guests costs its 30 s once.
  o.cache_dir = ks::test::integration_cache();
  return o;
}

PointContext context(const ks::experiment::Experiment& e, const fs::path& dir, const fs::path& bzimage) {
  return PointContext{e, e.arms.at("control"), 0, 0, dir, dir / "points/00-control", bzimage, ""};
}

// Processes whose command line mentions NEEDLE (the test's own directory): QEMU left behind.
std::vector<std::string> processes_mentioning(const std::string& needle) {
  std::vector<std::string> found;
  for (auto& entry : fs::directory_iterator("/proc")) {
    auto pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos || pid == std::to_string(getpid())) continue;
    auto cmdline = ks::try_read_file(entry.path() / "cmdline");
    if (cmdline && cmdline->find(needle) != std::string::npos) found.push_back(pid);
  }
  return found;
}

std::vector<fs::path> nvme_images_of(pid_t pid) {
  std::vector<fs::path> found;
  auto prefix = "ksandwich-nvme-" + std::to_string(pid) + "-";
  for (auto& entry : fs::directory_iterator("/dev/shm"))
    if (ks::starts_with(entry.path().filename().string(), prefix)) found.push_back(entry.path());
  return found;
}

void explain(const PointResult& r) {
  UNSCOPED_INFO("status " << r.status << ": " << r.failure << "\nconsole tail:\n" << r.console_tail);
}

}  // namespace

TEST_CASE("qemu: a short clone point boots and runs and reports over the results port") {
  auto bzimage = require_guest();
  TempDir dir;
  auto e = experiment("brd", 600);
  QemuBackend backend(backend_options());
  auto started = std::chrono::steady_clock::now();
  auto r = backend.run_point(context(e, dir.path, bzimage));
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  explain(r);
  REQUIRE(r.status == "ok");

  int rounds = 0;
  for (auto& record : r.agent_records) {
    CHECK(record["workload_id"] == "clone");
    if (record.value("type", "") != "round") continue;
    ++rounds;
    CHECK(record.value("ops", 0) == 500);
    CHECK_FALSE(record.contains("error"));
    double ns_per_op = record.value("ns_per_op", 0.0);
    CHECK(ns_per_op > 500);      // a 4 KiB clone is microseconds, even on bare metal
    CHECK(ns_per_op < 50e6);     // and not 50 ms, even under TCG on a loaded machine
  }
  CHECK(rounds == 2);

  auto& env = r.environment;
  CHECK_FALSE(r.kernel_release.empty());
  CHECK(env["kernel_release"] == r.kernel_release);
  auto clocksource = env["clocksource"].get<std::string>();
  CHECK_FALSE(clocksource.empty());
  CHECK(clocksource.find("jiffies") == std::string::npos);
  CHECK(env["preemption"] == "none");  // preempt=none on the command line, read back
  CHECK(env["kernel_cmdline"].get<std::string>().find("brd.rd_size=262144") != std::string::npos);
  CHECK((env["virtualization"] == "kvm" || env["virtualization"] == "tcg"));
  CHECK(env["initramfs"]["sha256"].get<std::string>().size() == 64);
  CHECK(r.storage["device"] == "/dev/ram0");
  CHECK(r.storage["size_mib"] == 256);
  CHECK(r.storage["kernel_mount_options"].get<std::string>().find("rw") == 0);
  CHECK(fs::file_size(dir.path / r.log) > 0);  // the console, saved as the point's log
  CHECK(fs::exists(dir.path / "points/00-control/results.jsonl"));
  CHECK(processes_mentioning(dir.path.string()).empty());

  double boot = env["boot_to_agent_s"].is_number() ? env["boot_to_agent_s"].get<double>() : -1;
  WARN("virtualization " << env["virtualization"] << ", boot to agent " << boot << " s (guest uptime), point wall "
                         << wall << " s, initramfs " << env["initramfs"]["size_bytes"] << " bytes");

  // The initramfs is built once per run: a second point reuses it.
  auto again = backend.run_point(PointContext{e, e.arms.at("patched"), 1, 0, dir.path,
                                              dir.path / "points/01-patched", bzimage, r.kernel_release});
  explain(again);
  CHECK(again.status == "ok");
  CHECK(again.environment["initramfs"]["sha256"] == env["initramfs"]["sha256"]);
}

TEST_CASE("qemu: two boots of one kernel count the same instructions per op, within the icount floor") {
  auto bzimage = require_guest();
  TempDir dir;
  auto e = experiment("brd", 600);
  auto options = backend_options();
  options.clock = "instructions";  // TCG's instruction clock, also where KVM works
  QemuBackend backend(options);
  const auto& floor = ks::evidence::clock_named("icount").resolution_sd_log_ratio;
  std::vector<double> best;
  for (int point = 0; point < 2; ++point) {
    auto r = backend.run_point(PointContext{e, e.arms.at("control"), point, 0, dir.path,
                                            dir.path / ("points/0" + std::to_string(point) + "-control"), bzimage,
                                            ""});
    explain(r);
    REQUIRE(r.status == "ok");
    CHECK(r.environment["clock"] == "icount");
    CHECK(r.environment["virtualization"] == "tcg");
    CHECK(std::find(r.environment["qemu_argv"].begin(), r.environment["qemu_argv"].end(), "-icount") !=
          r.environment["qemu_argv"].end());
    double b = 0;
    for (auto& record : r.agent_records)
      if (record.value("type", "") == "round" && !record.value("warmup", false)) {
        double v = record.value("ns_per_op", 0.0);
        if (v > 0 && (b == 0 || v < b)) b = v;
      }
    REQUIRE(b > 0);
    best.push_back(b);
  }
  const double apart = std::fabs(std::log(best[1] / best[0]));
  std::printf("icount: clone best round %.1f and %.1f instr/op in two boots: %.4f%% apart (floor %.3f%%)\n", best[0],
              best[1], 100 * apart, 100 * floor);
  CHECK(apart <= floor);
}

TEST_CASE("qemu: a guest whose init cannot start panics and is a failed point within its timeout") {
  auto bzimage = require_guest();
  TempDir dir;
  const uint32_t timeout_s = 300;
  auto e = experiment("brd", timeout_s, {"rdinit=/nonexistent"});
  QemuBackend backend(backend_options());
  auto started = std::chrono::steady_clock::now();
  auto r = backend.run_point(context(e, dir.path, bzimage));
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  explain(r);
  CHECK(r.status == "failed");
  CHECK(r.failure.find("panic") != std::string::npos);
  CHECK(r.console_tail.find("Kernel panic") != std::string::npos);
  CHECK(r.agent_records.empty());
  CHECK(wall < timeout_s);  // panic=-1 and -no-reboot end QEMU; the timeout is not what stopped it
  CHECK(processes_mentioning(dir.path.string()).empty());
}

TEST_CASE("qemu: a guest that hangs is killed at the point timeout") {
  auto bzimage = require_guest();
  TempDir dir;
  // init is `sleep 100000`: the kernel hands words without '=' to init as arguments.
  auto e = experiment("brd", 45, {"rdinit=/bin/sleep", "100000"});
  QemuBackend backend(backend_options());
  auto r = backend.run_point(context(e, dir.path, bzimage));
  explain(r);
  CHECK(r.status == "failed");
  CHECK(r.failure.find("did not finish within point_timeout_s = 45 s") != std::string::npos);
  CHECK_FALSE(r.console_tail.empty());
  CHECK(processes_mentioning(dir.path.string()).empty());
}

TEST_CASE("qemu: a guest on a jiffies clocksource is refused with that reason") {
  auto bzimage = require_guest();
  TempDir dir;
  auto e = experiment("brd", 600, {"clocksource=jiffies"});
  QemuBackend backend(backend_options());
  auto r = backend.run_point(context(e, dir.path, bzimage));
  explain(r);
  CHECK(r.status == "failed");
  CHECK(r.failure.find("clocksource is 'jiffies'") != std::string::npos);
  CHECK(r.environment["clocksource"] == "jiffies");
  CHECK(r.agent_records.empty());  // the guest ran no workload on that clock
}

TEST_CASE("qemu: an emulated NVMe drive backed by a file that is deleted afterwards") {
  auto bzimage = require_guest();
  KS_SKIP_UNLESS(fs::is_directory("/dev/shm"), "no /dev/shm for the NVMe backing file");
  TempDir dir;
  auto e = experiment("nvme", 600);
  QemuBackend backend(backend_options());
  auto r = backend.run_point(context(e, dir.path, bzimage));
  explain(r);
  REQUIRE(r.status == "ok");
  CHECK(r.storage["device"] == "/dev/nvme0n1");
  CHECK(r.storage["size_mib"] == 256);
  CHECK_FALSE(r.storage.value("backing_file", "").empty());
  CHECK_FALSE(fs::exists(r.storage.value("backing_file", "")));
  CHECK(nvme_images_of(getpid()).empty());
}

TEST_CASE("qemu: Ctrl-C during a boot kills QEMU and removes the NVMe backing file") {
  auto bzimage = require_guest();
  TempDir dir;
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ks::proc::install_interrupt_handlers();
    auto e = experiment("nvme", 600);
    e.rounds = 200;  // a point that cannot end before the interrupt, however fast the guest
    QemuBackend backend(backend_options());
    try {
      backend.run_point(context(e, dir.path, bzimage));
    } catch (const ks::Interrupted&) {
      std::_Exit(42);
    } catch (...) {
      std::_Exit(1);
    }
    std::_Exit(0);
  }
  // Wait until QEMU runs (after the initramfs is built), let it boot a little, interrupt.
  auto deadline = std::chrono::steady_clock::now() + 10min;
  while (processes_mentioning(dir.path.string()).empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(100ms);
  std::this_thread::sleep_for(2s);
  CHECK_FALSE(processes_mentioning(dir.path.string()).empty());  // QEMU is running
  kill(child, SIGINT);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 42);
  CHECK(processes_mentioning(dir.path.string()).empty());
  CHECK(nvme_images_of(child).empty());
}

#include "machine/doctor.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "machine/machine.hpp"
#include "proc/runner.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::machine {
namespace {

namespace fs = std::filesystem;

}  // namespace

std::string install_hint(const std::string& package, bool source_tree) {
  return source_tree ? "run tools/setup.sh as root (it installs " + package + ")"
                     : "apt-get install " + package;
}

bool is_source_tree(const std::filesystem::path& data_dir) {
  return !data_dir.empty() && fs::is_regular_file(data_dir / "tools/setup.sh");
}

void require_program(const std::string& program, const std::string& package, const std::string& why,
                     const std::filesystem::path& data_dir) {
  if (!proc::have_program(program))
    throw UserError(program + " is not installed; it is needed " + why,
                    install_hint(package, is_source_tree(data_dir)));
}

Check load_check(std::string_view loadavg, unsigned cpus) {
  Check c{"machine load", false, false, false, "", ""};
  c.advice = true;
  double load = 0;
  auto first = std::string(loadavg.substr(0, loadavg.find(' ')));
  char* end = nullptr;
  load = std::strtod(first.c_str(), &end);
  if (first.empty() || end != first.c_str() + first.size() || cpus == 0) {
    c.detail = "cannot tell: /proc/loadavg reads `" + std::string(loadavg.substr(0, 40)) + "`";
    c.fix = "a busy machine slows every point and adds noise to the host and bare-metal clocks";
    return c;
  }
  c.ok = load < 0.5 * cpus;
  c.detail = fmt::format("{:.2f} over the last minute on {} CPU{}", load, cpus, cpus == 1 ? "" : "s");
  c.fix = "other work is running: it slows every point (a run may reach its timeouts) and adds noise to the "
          "host and bare-metal clocks; let it finish (the instruction counts of QEMU's clock do not see it)";
  return c;
}

Check cache_space_check(const fs::path& cache, std::optional<std::uintmax_t> free_bytes) {
  constexpr std::uintmax_t kGiB = 1ull << 30, kNeeded = 3 * kGiB;
  Check c{"kernel cache space", false, false, false, "", ""};
  c.advice = true;
  c.fix = "a cold main job needs about 2 GiB in the kernel cache (the unpacked source 1.3 GiB, two builds of "
          "0.3 GiB): free space there, or point KSANDWICH_CACHE at a filesystem with room";
  if (!free_bytes) {
    c.detail = "cannot tell the free space of " + cache.string();
    return c;
  }
  c.ok = *free_bytes >= kNeeded;
  c.detail = fmt::format("{:.1f} GiB free for {}", static_cast<double>(*free_bytes) / kGiB, cache.string());
  return c;
}

std::optional<std::uintmax_t> free_bytes(const fs::path& path) {
  std::error_code ec;
  auto p = fs::absolute(path, ec);
  if (ec) return std::nullopt;
  while (!fs::is_directory(p, ec) && p != p.root_path()) p = p.parent_path();
  auto info = fs::space(p, ec);
  if (ec) return std::nullopt;
  return info.available;
}

std::vector<Check> doctor_checks(bool source_tree) {
  auto program = [source_tree](const std::string& name, const std::string& program, const std::string& package,
                               bool required, bool main_job = false) {
    auto path = proc::find_program(program);
    return Check{name, path.has_value(), required, main_job, path ? path->string() : "not found",
                 install_hint(package, source_tree)};
  };
  std::vector<Check> checks;
  bool root = geteuid() == 0;
  checks.push_back({"root", root, true, true, root ? "running as root" : "not root",
                    "the harness formats devices and keeps kernels in /var/cache/ksandwich: run as root"});
  checks.push_back({"btrfs in the running kernel", have_filesystem("btrfs"), true, false,
                    have_filesystem("btrfs") ? "listed in /proc/filesystems" : "missing",
                    "modprobe btrfs"});
  checks.push_back(program("mkfs.btrfs", "mkfs.btrfs", "btrfs-progs", true, true));
  bool uring = have_io_uring();
  checks.push_back({"io_uring", uring, false, false, uring ? "io_uring_setup works" : "io_uring_setup failed",
                    "check /proc/sys/kernel/io_uring_disabled and the kernel config (CONFIG_IO_URING)"});

  bool brd = fs::exists("/dev/ram0") || proc::run(proc::command({"modinfo", "brd"}, std::chrono::seconds(10))).ok();
  checks.push_back({"brd (RAM block device)", brd, false, false, brd ? "available" : "not in this kernel",
                    "zram or loop over /dev/shm is used instead (storage.kind \"auto\")"});
  bool zram = fs::exists("/sys/class/zram-control/hot_add");
  checks.push_back({"zram", zram, false, false, zram ? "/sys/class/zram-control present" : "missing",
                    "modprobe zram"});
  bool loop = fs::exists("/dev/loop-control");
  checks.push_back({"loop devices", loop, false, false, loop ? "/dev/loop-control present" : "missing",
                    "modprobe loop"});
  checks.push_back(program("losetup", "losetup", "mount", false));

  auto preempt = preemption_mode();
  checks.push_back({"preemption mode readable", preempt.has_value(), false, false,
                    preempt ? *preempt : "/sys/kernel/debug/sched/preempt unreadable",
                    "mount -t debugfs none /sys/kernel/debug"});
  auto governor = try_read_file("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  checks.push_back({"CPU frequency governor", governor.has_value(), false, false,
                    governor ? trim(*governor) : "no cpufreq (typical in a VM)",
                    "on a lab machine: cpupower frequency-set -g performance"});

  checks.push_back(program("fio", "fio", "fio", false));
  checks.push_back(program("QEMU", "qemu-system-x86_64", "qemu-system-x86", false, true));
  checks.push_back({"busybox (static)", fs::exists("/bin/busybox"), false, true,
                    fs::exists("/bin/busybox") ? "/bin/busybox" : "missing", install_hint("busybox-static", source_tree)});
  bool source = fs::exists("/usr/src/linux-source-6.1.tar.xz");
  checks.push_back({"default kernel source", source, false, true,
                    source ? "/usr/src/linux-source-6.1.tar.xz" : "missing", install_hint("linux-source-6.1", source_tree)});
  // The program each kernel build needs, and its Debian package.
  const std::pair<const char*, const char*> kernel_build_tools[] = {
      {"make", "make"}, {"gcc", "gcc"},       {"flex", "flex"}, {"bison", "bison"},
      {"bc", "bc"},     {"ccache", "ccache"}, {"cpio", "cpio"}, {"lz4", "lz4"},
      {"bwrap", "bubblewrap"}};  // confines make as root (kernel/kbuild.cpp)
  for (auto [tool, package] : kernel_build_tools)
    checks.push_back(program(std::string("kernel build: ") + tool, tool, package, false, true));
  bool jsonschema = proc::have_program("python3") && proc::run(proc::command({"python3", "-I", "-c", "import jsonschema"}, std::chrono::seconds(30))).ok();  // -I: not from the current directory
  checks.push_back({"python3-jsonschema (validate)", jsonschema, false, false,
                    jsonschema ? "python3 imports jsonschema" : "missing: `ksandwich validate` cannot check schemas",
                    "apt-get install python3-jsonschema"});
  return checks;
}

}  // namespace ks::machine

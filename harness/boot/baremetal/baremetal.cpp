// The bare-metal backend's side effects: the results device, the switch record, the
// registration for the boot hook, kexec_file_load and the reboot into the loaded kernel.
#include "boot/baremetal/baremetal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <thread>

#include "boot/baremetal/kexec.hpp"
#include "boot/phases.hpp"
#include "boot/qemu.hpp"
#include "machine/doctor.hpp"
#include "machine/machine.hpp"
#include "proc/runner.hpp"
#include "storage/storage.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"
#include "util/ownership.hpp"
#include "util/progress.hpp"

namespace ks::boot::baremetal {
namespace {

using nlohmann::json;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// N bytes of DEVICE from OFFSET (fewer at its end).
std::string read_device(const std::string& device, uint64_t offset, uint64_t n) {
  int fd = open(device.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw SystemError("open results device " + device, errno);
  std::string data(n, '\0');
  uint64_t got = 0;
  while (got < n) {
    auto r = pread(fd, data.data() + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<uint64_t>(r);
  }
  close(fd);
  data.resize(got);
  return data;
}

void write_slot(const std::string& device, const SlotHeader& header) {
  int fd = open(device.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw SystemError("open results device " + device, errno);
  auto block = slot_block(header);
  auto written = pwrite(fd, block.data(), block.size(), 0);
  int err = errno;
  bool synced = fsync(fd) == 0;
  close(fd);
  if (written != static_cast<ssize_t>(block.size()) || !synced)
    throw SystemError("write the slot header to " + device, err);
}

std::optional<SlotHeader> read_slot(const std::string& device) {
  return parse_slot_block(read_device(device, 0, kSlotHeaderBytes));
}

std::string random_slot() {
  return hex(read_device("/dev/urandom", 0, 8));
}

fs::path pending_file() { return state_dir() / "pending"; }

// When this kernel started, CLOCK_REALTIME seconds.
double booted_at() {
  auto uptime = split(read_first_line("/proc/uptime", "0"), ' ');
  return unix_now() - std::stod(uptime.empty() ? "0" : uptime[0]);
}

// /sys/class/block/<name> of a device node (symlinks resolved); throws UserError when it is none.
fs::path sysfs_of(const std::string& device) {
  std::error_code ec;
  auto real = fs::canonical(device, ec);
  if (ec || !fs::exists("/sys/class/block/" + real.filename().string()))
    throw UserError(device + " is not a block device of this machine", "name a drive or partition under /dev");
  return "/sys/class/block/" + real.filename().string();
}

// The disk a partition is on (itself when it is a disk).
fs::path disk_of(const fs::path& sysfs) {
  return fs::exists(sysfs / "partition") ? fs::canonical(sysfs).parent_path() : fs::canonical(sysfs);
}

// What stays the same about a drive across reboots and kernels: its wwid, else its serial.
std::string drive_identity(const fs::path& disk) {
  for (const char* f : {"wwid", "device/wwid", "serial", "device/serial"})
    if (auto v = trim(read_first_line(disk / f)); !v.empty()) return v;
  return "";
}

// The results device as the run first saw it: its drive's identity (or, without one, its
// name and number), the partition, the size. A later switch writes only to the same.
json results_identity(const std::string& device) {
  auto sys = sysfs_of(device);
  auto disk = disk_of(sys);
  return {{"drive", drive_identity(disk).empty() ? disk.filename().string() + " " + trim(read_first_line(disk / "dev"))
                                                 : drive_identity(disk)},
          {"partition", trim(read_first_line(sys / "partition", "whole drive"))},
          {"size_sectors", trim(read_first_line(sys / "size"))}};
}

std::optional<Switch> read_switch(const fs::path& file) {
  auto text = try_read_file(file);
  if (!text) return std::nullopt;
  try {
    return json::parse(*text).get<Switch>();
  } catch (const json::exception& e) {
    throw UserError(file.string() + " is not a switch record: " + e.what(),
                    "a run's files are the harness's own; start a new run with --out NEWDIR");
  }
}

// The switch record moves aside once the lab has judged it: the point's evidence, and a
// rerun starts with no record in the way.
void archive_switch(const fs::path& point_dir, const Switch& s) {
  fs::rename(point_dir / "switch.json", point_dir / fmt::format("switch-{}.json", s.attempt));
}

std::string release_now() { return machine::kernel_release(); }

}  // namespace

fs::path state_dir() {
  const char* env = std::getenv("KSANDWICH_BAREMETAL_STATE");
  fs::path dir = env && *env ? fs::path(env) : fs::path("/var/lib/ksandwich/baremetal");
  if (auto why = untrusted_on_the_way(dir, PathRole::kTrustedDirectory))
    throw UserError("the bare-metal state directory " + dir.string() + ": " + *why,
                    "what it names, root's boot hook resumes: unset KSANDWICH_BAREMETAL_STATE for root's own "
                    "/var/lib/ksandwich/baremetal, or make it and the directories above it root's alone (chown, chmod go-w)");
  return dir;
}

std::string pending_run() {
  auto file = state_dir() / "pending";
  try {
    return trim(read_regular_file(file, 4096, Links::refuse).value_or(""));
  } catch (const SystemError& e) {
    throw UserError(std::string("the boot hook's registration: ") + e.what(),
                    "remove " + file.string() + "; ksandwich writes it as a small regular file");
  }
}

BaremetalBackend::BaremetalBackend(BackendOptions options) : options_(std::move(options)) {}

BaremetalBackend::~BaremetalBackend() {
  // Still here: the run ended (or failed) without leaving for another kernel, so it waits
  // for no boot hook (whoever registered it).
  if (bundle_dir_.empty()) return;
  std::error_code ec;
  try {
    if (pending_run() == bundle_dir_.string()) fs::remove(pending_file(), ec);
  } catch (const std::exception&) {  // a registration not its own: left for `baremetal status` to name
  }
}

void BaremetalBackend::check_experiment(const experiment::Experiment& e) {
  bm_ = parse_options(e.backend_section);
  // The kernel and initrd the machine kexecs back into run as its root: no one else's
  // (twenty-fifth attack: another user's, named by the experiment, were taken as they were).
  for (auto [key, path] : {std::pair{"lab_kernel", bm_.lab_kernel}, {"lab_initrd", bm_.lab_initrd.value_or("")}}) {
    if (path.empty()) continue;
    if (!fs::path(path).is_absolute())
      throw UserError(std::string("experiment: /baremetal/") + key + ": " + one_line(path) + " is not an absolute path",
                      "name the image by its absolute path (/boot/...)");
    require_trusted_input(path, std::string("baremetal.") + key);
  }
  if (!e.governor.empty())
    throw UserError("experiment: /governor: the baremetal backend does not set it in the test kernel",
                    "drop \"governor\" (boot the arms with cpufreq.default_governor=performance in their cmdline)");
}

std::string BaremetalBackend::lab_kernel() const {
  return bm_.lab_kernel.empty() ? "/boot/vmlinuz-" + release_now() : bm_.lab_kernel;
}

std::optional<std::string> BaremetalBackend::lab_initrd() const {
  if (bm_.lab_initrd) return bm_.lab_initrd->empty() ? std::nullopt : bm_.lab_initrd;
  auto initrd = "/boot/initrd.img-" + release_now();
  return fs::exists(initrd) ? std::optional<std::string>(initrd) : std::nullopt;
}

std::string BaremetalBackend::storage_identity(const experiment::Experiment& e) const {
  if (e.storage.kind != "device") return "";
  auto sys = sysfs_of(e.storage.device);
  if (fs::exists(sys / "partition"))
    throw UserError("experiment: /storage/device: " + e.storage.device + " is a partition",
                    "on bare metal name a whole drive (an NVMe namespace): the test kernel finds it by its identity");
  auto identity = drive_identity(sys);
  if (identity.empty())
    throw UserError("experiment: /storage/device: " + e.storage.device + " has no wwid or serial",
                    "the test kernel names drives its own way and finds this one by its identity: name a drive "
                    "that has one (NVMe namespaces do)");
  return identity;
}

std::string BaremetalBackend::lab_cmdline() const {
  return bm_.lab_cmdline.empty() ? trim(read_first_line("/proc/cmdline")) : bm_.lab_cmdline;
}

void BaremetalBackend::check_machine(const experiment::Experiment& e) const {
  if (geteuid() != 0)
    throw UserError("the baremetal backend switches this machine's kernel, which needs root", "run ksandwich as root");
  (void)pending_run();  // the state directory root's boot hook trusts, and what it holds, are sound
  if (auto why = kexec::unavailable())
    throw UserError("this kernel cannot switch to the arms' kernels: " + *why,
                    "`ksandwich doctor` says what this machine allows; the lab kernel needs CONFIG_KEXEC_FILE, "
                    "kernel.kexec_load_disabled = 0 and no lockdown (or kernels signed for it)");
  machine::require_program("mkfs.btrfs", "btrfs-progs", "in the test kernel (it is copied into the initramfs)",
                           options_.data_dir);
  if (!fs::exists(kBusybox))
    throw UserError(std::string(kBusybox) + " is missing; the test kernel's shell and tools are busybox",
                    machine::install_hint("busybox-static", machine::is_source_tree(options_.data_dir)));
  // The results device: handed over (results_allow_overwrite), not in use, 16 MiB or more,
  // on no drive the test kernel formats.
  const auto& device = bm_.results_device;
  storage::guard_device(device, bm_.results_allow_overwrite);
  auto results = sysfs_of(device);
  if (std::stoull("0" + trim(read_first_line(results / "size"))) * 512 < (16ULL << 20))
    throw UserError("results device " + device + " is smaller than 16 MiB", "give the results a larger partition");
  if (e.storage.kind == "device") {
    storage::guard_device(e.storage.device, e.storage.allow_overwrite);
    if (disk_of(sysfs_of(e.storage.device)) == disk_of(results))
      throw UserError("experiment: /storage/device: " + e.storage.device + " holds the results device " + device,
                      "give the results a drive of their own");
    (void)storage_identity(e);
  }
  if (bm_.return_by == "kexec" && !fs::is_regular_file(lab_kernel()))
    throw UserError("the lab kernel " + lab_kernel() + " does not exist: a test kernel cannot kexec back into it",
                    "set baremetal.lab_kernel to the image of the kernel running now, or \"return\": \"reboot\"");
}

// The results device must be the one the run began with: device names may change at boot.
void BaremetalBackend::check_results_device(const PointContext& ctx) const {
  auto file = ctx.bundle_dir / "results-device.json";
  auto now = results_identity(bm_.results_device);
  auto recorded = try_read_file(file);
  if (!recorded) {
    write_file_atomic(file, now.dump(2) + "\n");
    return;
  }
  if (json::parse(*recorded) != now)
    throw UserError("the results device " + bm_.results_device + " is not the one this run began with (" +
                        trim(*recorded) + " then, " + now.dump() + " now): device names changed at boot",
                    "name it by a stable path (/dev/disk/by-partuuid/...) in a new run");
}

void BaremetalBackend::preflight(const std::optional<fs::path>& control_kernel) {
  // The build cache keeps each kernel's config beside its bzImage.
  if (!control_kernel) return;
  auto config = control_kernel->parent_path() / "config";
  if (fs::exists(config) && !read_file_contains(config, "\nCONFIG_SOFT_WATCHDOG=y"))
    throw UserError("the arms' kernels have no software watchdog (CONFIG_SOFT_WATCHDOG): a test kernel that hangs "
                    "would stall the lab machine",
                    "build them with configs/kernel/btrfs-bench.config, or add CONFIG_WATCHDOG=y and "
                    "CONFIG_SOFT_WATCHDOG=y to a fragment");
}

json BaremetalBackend::machine() {
  json m = machine::describe_host();
  m["virtualization"] = "none";
  auto dmi = [](const char* field) { return trim(read_first_line(std::string("/sys/class/dmi/id/") + field)); };
  m["lab"] = {{"kernel_release", release_now()},
              {"kernel_cmdline", trim(read_first_line("/proc/cmdline"))},
              {"vendor", dmi("sys_vendor")},
              {"product", dmi("product_name")},
              {"board", dmi("board_name")},
              {"machine_id", trim(read_first_line("/etc/machine-id"))}};
  m["switch"] = {{"method", "kexec_file_load"},
                 {"return", bm_.return_by},
                 {"results_device", bm_.results_device},
                 {"watchdog", "softdog in the test kernel, margin point_timeout_s"}};
  return m;
}

const Initramfs& BaremetalBackend::initramfs_for(const PointContext& ctx, const std::string& plan) {
  if (auto it = initramfs_by_plan_.find(plan); it != initramfs_by_plan_.end()) return it->second;
  auto out = ctx.bundle_dir / "initramfs" / ("baremetal-" + sha256_hex(plan).substr(0, 12) + ".cpio");
  if (fs::exists(out)) {  // built before the switch; the resumed run reuses it
    Initramfs found{out, sha256_file(out), fs::file_size(out), {}};
    return initramfs_by_plan_.emplace(plan, std::move(found)).first->second;
  }
  auto spec = guest_initramfs_spec(ctx.experiment, options_, plan);
  if (bm_.return_by == "kexec") {
    spec.files.push_back({lab_kernel(), "/ksandwich/lab/kernel"});
    if (auto initrd = lab_initrd()) spec.files.push_back({*initrd, "/ksandwich/lab/initrd"});
  }
  progress::say("ksandwich: building the test kernels' initramfs (busybox, agent, mkfs.btrfs" +
                std::string(bm_.return_by == "kexec" ? ", the lab kernel" : "") + ")");
  auto built = build_initramfs(spec, out);
  return initramfs_by_plan_.emplace(plan, std::move(built)).first->second;
}

std::string BaremetalBackend::describe_point(const PointContext& ctx) const {
  // The drive's identity is read when the run starts (--dry-run reads nothing).
  auto plan = test_plan(ctx.experiment, ctx.arm, bm_.return_by, lab_cmdline(),
                        ctx.experiment.storage.kind == "device" ? "<wwid or serial of " + ctx.experiment.storage.device + ">"
                                                                : "");
  auto kernel = ctx.kernel_image ? ctx.kernel_image->string() : "<bzImage of arm " + ctx.arm.name + ">";
  return "# the results device " + bm_.results_device + ": slot header \"armed\" in its first block\n"
         "# kexec_file_load " + kernel + " with the initramfs below, command line:\n#   " +
         test_cmdline(ctx.experiment, ctx.arm, "<slot>") + "\n# then reboot(RB_KEXEC); back by " + bm_.return_by +
         ", and the boot hook resumes the run\n# /ksandwich/plan.sh in the initramfs:\n" + plan;
}

PointResult BaremetalBackend::run_point(const PointContext& ctx) {
  if (!ctx.kernel_image || !fs::is_regular_file(*ctx.kernel_image))
    throw UserError("the baremetal backend needs the kernel image of arm " + ctx.arm.name,
                    "build the arm's kernel first (ksandwich build)");
  fs::create_directories(ctx.point_dir);
  bundle_dir_ = ctx.bundle_dir;
  check_results_device(ctx);
  int attempt = 1;
  std::string started_at = now_utc_iso8601();
  double first = unix_now();
  if (auto s = read_switch(ctx.point_dir / "switch.json")) {
    std::optional<SlotHeader> header;
    try {
      header = read_slot(bm_.results_device);
    } catch (const SystemError& e) {
      return failed(*s, std::string("the results device cannot be read: ") + e.what());
    }
    auto outcome = judge_return(*s, header, booted_at(), ctx.experiment.point_timeout_s);
    archive_switch(ctx.point_dir, *s);
    switch (outcome.kind) {
      case Outcome::Kind::Collect: return collect(ctx, *s, header->bytes);
      case Outcome::Kind::Failed: return failed(*s, outcome.why);
      case Outcome::Kind::Rerun:
        progress::say("ksandwich: point " + std::to_string(ctx.point + 1) + ": " + outcome.why);
        attempt = s->attempt + 1;
        started_at = s->started_at;
        first = s->first_switched_at;
        break;
    }
  }
  switch_out(ctx, attempt, started_at, first);
}

void BaremetalBackend::switch_out(const PointContext& ctx, int attempt, const std::string& started_at,
                                  double first_switched_at) {
  const auto& e = ctx.experiment;
  auto plan = test_plan(e, ctx.arm, bm_.return_by, lab_cmdline(), storage_identity(e));
  const Initramfs& initramfs = initramfs_for(ctx, plan);
  Switch s;
  s.slot = random_slot();
  s.attempt = attempt;
  s.started_at = started_at;
  s.first_switched_at = first_switched_at;
  s.kernel = ctx.kernel_image->string();
  s.kernel_release = ctx.kernel_release;
  s.initramfs = fs::relative(initramfs.path, ctx.bundle_dir).string();
  s.initramfs_sha256 = initramfs.sha256;
  s.cmdline = test_cmdline(e, ctx.arm, s.slot);
  s.return_by = bm_.return_by;
  s.lab_release = release_now();

  kexec::load(*ctx.kernel_image, initramfs.path, s.cmdline);  // refused: the point fails, nothing written
  try {
    write_slot(bm_.results_device, {s.slot, "armed", 0});
    s.switched_at = unix_now();
    write_file_atomic(ctx.point_dir / "switch.json", json(s).dump(2) + "\n");
    fs::create_directories(state_dir());
    write_file_atomic(pending_file(), ctx.bundle_dir.string() + "\n");
  } catch (...) {
    kexec::unload();
    throw;
  }
  report_phase(ctx, {"switching to " + ctx.kernel_release + " (kexec)", true});
  progress::say(fmt::format("ksandwich: point {}: kexec into {}; the run goes on after the switch back ({})",
                            ctx.point + 1, ctx.kernel_release, bm_.return_by));
  std::fflush(nullptr);
  try {
    // Under systemd the polite way: services stopped and filesystems unmounted first.
    if (fs::is_directory("/run/systemd/system")) {
      auto cmd = proc::command({"systemctl", "--no-block", "kexec"}, std::chrono::seconds(60));
      cmd.cleanup = true;  // asked for even when a signal came in meanwhile
      proc::run_checked(cmd);
    } else {
      kexec::reboot_into_loaded();
    }
  } catch (...) {  // still here: no switch happened, so none is on record
    fs::remove(ctx.point_dir / "switch.json");
    kexec::unload();
    throw;
  }
  // systemd takes it from here. Nothing is left to unwind: the run waits on disk, and a
  // signal (systemd stopping everything) ends this process at once.
  for (;;) {
    if (proc::interrupted()) std::_Exit(0);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

PointResult BaremetalBackend::failed(const Switch& s, const std::string& why) const {
  PointResult r;
  r.status = "failed";
  r.failure = why;
  r.started_at = s.started_at;
  r.seconds = unix_now() - s.first_switched_at;
  r.environment = {{"switch", json(s)}, {"lab_kernel_release", release_now()}};
  return r;
}

PointResult BaremetalBackend::collect(const PointContext& ctx, const Switch& s, uint64_t bytes) const {
  const auto& e = ctx.experiment;
  auto text = read_device(bm_.results_device, kSlotHeaderBytes, bytes);
  write_file(ctx.point_dir / "results.jsonl", text);
  GuestRun guest{.report = parse_guest_results(text),
                 .console = {},
                 .timed_out = false,
                 .timeout_s = e.point_timeout_s,
                 .qemu_exit_code = 0,
                 .qemu_output = {},
                 .expected_release = s.kernel_release};
  guest.console = guest.report.console.value_or("");
  auto console_log = ctx.point_dir / "console.log";
  write_file(console_log, guest.console);
  auto result = guest_point_result(ctx, guest, guest_storage(e.storage), console_log);
  json env = guest_environment(guest.report.guest);
  const double back = unix_now();
  env["virtualization"] = "none";
  env["watchdog"] = guest.report.guest.is_object() ? guest.report.guest.value("watchdog", "") : "";
  env["kernel_image"] = s.kernel;
  env["initramfs"] = {{"path", s.initramfs}, {"sha256", s.initramfs_sha256}};
  env["guest_timeline_s"] = guest_timeline(guest.report);
  env["boot_to_agent_s"] = env["guest_timeline_s"]["agent_started"];
  env["switch"] = json(s);
  env["switch"]["back_at"] = back;
  env["switch"]["away_s"] = back - s.switched_at;  // kexec out, boot, the point, the way back, the lab's boot
  env["lab_kernel_release"] = release_now();
  result.environment = env;
  result.started_at = s.started_at;
  result.seconds = back - s.first_switched_at;
  return result;
}

}  // namespace ks::boot::baremetal

// The QEMU backend. One point = one boot: QEMU starts the arm's bzImage with the run's
// initramfs, the guest init (guest/init.sh) makes a fresh btrfs and runs the agent, and
// every record comes back over the virtio-serial port "ksandwich.results", which QEMU
// writes to DIR/points/NN-arm/results.jsonl. The console goes to console.log beside it.
#include "boot/qemu.hpp"
#include "boot/qemu_detail.hpp"
#include "boot/phases.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>

#include "machine/doctor.hpp"
#include "machine/machine.hpp"
#include "proc/runner.hpp"
#include "trace/kernel_log.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"
#include "util/journal.hpp"
#include "util/progress.hpp"

namespace ks::boot {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using namespace detail;

const std::string kQemu = "qemu-system-x86_64";

// qemu.log opens with the command line the harness wrote; what QEMU said follows.
std::string without_command_line(const std::string& log) {
  if (!starts_with(log, "$ ")) return log;
  auto end = log.find('\n');
  return end == std::string::npos ? std::string() : log.substr(end + 1);
}

// The file behind the emulated NVMe drive: created sparse before the boot, deleted after,
// also when the point fails or Ctrl-C unwinds. In /dev/shm, so the drive is RAM-backed.
class NvmeImage {
 public:
  NvmeImage(fs::path path, uint64_t size_mib)
      : path_(std::move(path)), journaled_(journal::record("file", {{"path", path_.string()}})) {
    int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
      int err = errno;
      journal::record_undone(journaled_);
      throw SystemError("create NVMe backing file " + path_.string(), err);
    }
    journal::amend(journaled_, journal::identity_of(path_));
    int rc = ftruncate(fd, static_cast<off_t>(size_mib) << 20);
    int err = errno;
    close(fd);
    if (rc != 0) {
      fs::remove(path_);
      journal::record_undone(journaled_);
      throw SystemError("size NVMe backing file " + path_.string(), err);
    }
  }
  ~NvmeImage() {
    std::error_code ec;
    fs::remove(path_, ec);
    if (!ec) journal::record_undone(journaled_);
  }
  NvmeImage(const NvmeImage&) = delete;
  NvmeImage& operator=(const NvmeImage&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  uint64_t journaled_;
};

fs::path nvme_image_path(const PointContext& ctx) {
  fs::path dir = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : ctx.point_dir;
  // Not by pid and point alone: another user could make those names first (fifty-third attack).
  return fresh_name(dir, "ksandwich-nvme-" + std::to_string(getpid()) + "-" + std::to_string(ctx.point) + "-");
}

fs::path initramfs_path(const fs::path& bundle_dir, const std::string& plan) {
  return bundle_dir / "initramfs" / ("initramfs-" + sha256_hex(plan).substr(0, 12) + ".cpio");
}

std::string qemu_version() {
  try {
    proc::Command cmd;
    cmd.argv = {kQemu, "--version"};
    cmd.timeout = 30s;
    auto r = proc::run(cmd);
    if (r.ok()) return trim(split(r.out, '\n').front());
  } catch (const SystemError&) {
  }
  return "";
}

}  // namespace

// ---- The backend --------------------------------------------------------------------

QemuBackend::QemuBackend(BackendOptions options) : options_(std::move(options)) {}

void QemuBackend::check_machine(const experiment::Experiment& e) const {
  machine::require_program("qemu-system-x86_64", "qemu-system-x86", "to boot the kernels", options_.data_dir);
  machine::require_program("mkfs.btrfs", "btrfs-progs", "inside the guest (it is copied into the initramfs)",
                           options_.data_dir);
  if (!fs::exists(kBusybox))
    throw UserError(std::string(kBusybox) + " is missing; the guest's shell and tools are busybox",
                    machine::install_hint("busybox-static", machine::is_source_tree(options_.data_dir)));
  check_guest_fits(e);  // a brd that fits in the guest's memory
}

void QemuBackend::preflight(const std::optional<fs::path>& control_kernel) {
  accel_.reset();
  accel(control_kernel);
}

const AccelChoice& QemuBackend::accel(const std::optional<fs::path>& kernel) {
  // A KVM that passed only the firmware probe is asked again with a kernel once there is one.
  if (accel_ && kernel && accel_->accel == "kvm" && !accel_kernel_probed_) accel_.reset();
  if (!accel_) {
    accel_kernel_probed_ = kernel.has_value();
    accel_ = choose_accel(requested_accel(), options_.cache_dir, kernel);
    progress::say("ksandwich: QEMU accelerator: " + accel_->accel + " (" + accel_->reason +
                  (accel_->remembered ? "; remembered from an earlier probe" : "") + ")");
  }
  return *accel_;
}

std::string QemuBackend::requested_accel() const {
  return options_.clock == "instructions" ? "tcg" : options_.accel;
}

const evidence::Clock& QemuBackend::clock() const {
  // --dry-run decides nothing: it shows what a TCG guest would get unless KVM is insisted on.
  const std::string accel = accel_ ? accel_->accel : requested_accel() == "kvm" ? "kvm" : "tcg";
  return evidence::qemu_clock(accel, options_.clock, options_.vcpus);
}

bool QemuBackend::undisturbed_clock() const {
  // Without a usable KVM device the accelerator can only be TCG (choose_accel); with one,
  // the probe decides later, and until then the run may be on the wall clock.
  auto accel = requested_accel();
  return (accel == "tcg" || (accel == "auto" && !machine::have_kvm())) && clock().deterministic;
}

json QemuBackend::machine() {
  json m = machine::describe_host();
  const auto& a = accel();
  m["virtualization"] = a.accel;
  m["accelerator"] = {{"used", a.accel},
                      {"requested", a.requested},
                      {"reason", a.reason},
                      {"kvm_probe", a.kvm_probe.empty() ? json() : json(a.kvm_probe)},
                      {"probe_remembered", a.remembered}};
  const auto& c = clock();
  m["clock"] = {{"name", c.name},
                {"requested", options_.clock},
                {"measures", c.measures},
                {"reason", c.name == "icount" ? "the guest runs under TCG, whose wall time is an emulation "
                                                    "artefact: rounds are timed in guest instructions"
                           : a.accel == "kvm"     ? "the guest runs under KVM: rounds are timed in wall time"
                           : options_.clock != "time"
                               ? "the guest has " + std::to_string(options_.vcpus) +
                                     " vCPUs working at once, which QEMU's instruction clock cannot run (under -icount a "
                                     "second vCPU never comes up): rounds are timed in wall time, noisy under TCG"
                               : "the experiment asks for wall time (\"clock\": \"time\")"}};
  auto path = proc::find_program(kQemu);
  m["qemu"] = {{"binary", path ? json(path->string()) : json()}, {"version", qemu_version()}};
  return m;
}

QemuSpec QemuBackend::spec_for(const PointContext& ctx, const fs::path& initrd,
                               const std::optional<fs::path>& nvme_image) const {
  const auto& e = ctx.experiment;
  QemuSpec s;
  s.qemu = kQemu;
  // --dry-run decides nothing: it shows KVM only when the experiment insists on it.
  s.kvm = accel_ ? accel_->accel == "kvm" : requested_accel() == "kvm";
  s.icount = clock().name == "icount";
  s.vcpus = e.qemu.vcpus;
  if (s.vcpus != options_.vcpus)  // the clock was chosen for options_.vcpus: -icount with -smp 2 hangs
    throw std::logic_error("the qemu backend was made for " + std::to_string(options_.vcpus) +
                           " vCPUs, the experiment has " + std::to_string(s.vcpus));
  s.memory_mib = e.qemu.memory_mib;
  s.kernel = ctx.kernel_image ? *ctx.kernel_image : fs::path("<bzImage of arm " + ctx.arm.name + ">");
  s.initrd = initrd;
  s.cmdline = guest_cmdline(e, ctx.arm);
  s.console_log = ctx.point_dir / "console.log";
  s.results = ctx.point_dir / "results.jsonl";
  s.nvme_image = nvme_image;
  s.pin_cpu = e.cpu;
  return s;
}

std::string QemuBackend::describe_point(const PointContext& ctx) const {
  auto plan = guest_plan(ctx.experiment, ctx.arm, clock());
  std::optional<fs::path> nvme;
  if (guest_storage(ctx.experiment.storage).kind == "nvme") nvme = nvme_image_path(ctx);
  auto spec = spec_for(ctx, initramfs_path(ctx.bundle_dir, plan), nvme);
  std::string accel_note =
      accel_ ? "# accelerator: " + accel_->accel + " (" + accel_->reason + ")\n"
             : "# accelerator: " + requested_accel() +
                   (requested_accel() == "auto" ? " (a KVM probe decides when the run starts; shown with tcg)" : "") +
                   "\n";
  accel_note += "# clock: " + clock().name + ", " + clock().measures + "\n";
  return accel_note + "$ " + shell_line(qemu_argv(spec)) + "\n# /ksandwich/plan.sh in the initramfs:\n" + plan;
}

InitramfsSpec guest_initramfs_spec(const experiment::Experiment& e, const BackendOptions& options,
                                   const std::string& plan) {
  InitramfsSpec spec;
  spec.agent = options.agent;
  auto mkfs = proc::find_program("mkfs.btrfs");
  require(mkfs.has_value(), "mkfs.btrfs not found: the guest needs it", "apt-get install btrfs-progs");
  spec.programs.push_back(*mkfs);
  if (std::any_of(e.workloads.begin(), e.workloads.end(), [](auto& w) { return w.name == "fio"; })) {
    auto fio = proc::find_program("fio");
    require(fio.has_value(), "fio not found: the guest needs it for the fio workload", "apt-get install fio");
    spec.programs.push_back(*fio);
  }
  spec.fio_jobs_dir = options.fio_jobs_dir;
  spec.init_script = guest_init_script();
  spec.plan = plan;
  return spec;
}

const Initramfs& QemuBackend::initramfs_for(const PointContext& ctx, const std::string& plan) {
  if (auto it = initramfs_by_plan_.find(plan); it != initramfs_by_plan_.end()) return it->second;
  auto spec = guest_initramfs_spec(ctx.experiment, options_, plan);
  progress::say(std::string("ksandwich: building the guest initramfs (busybox, agent, mkfs.btrfs") +
                (spec.programs.size() > 1 ? ", fio" : "") + ")");
  auto built = build_initramfs(spec, initramfs_path(ctx.bundle_dir, plan));
  return initramfs_by_plan_.emplace(plan, std::move(built)).first->second;
}

PointResult QemuBackend::run_point(const PointContext& ctx) {
  const auto& e = ctx.experiment;
  auto storage = guest_storage(e.storage);
  require(ctx.kernel_image.has_value(), "the qemu backend needs the kernel image of arm " + ctx.arm.name,
          "build the arm's kernel first (ksandwich build)");
  require(fs::is_regular_file(*ctx.kernel_image), "kernel image " + ctx.kernel_image->string() + " does not exist",
          "build the arm's kernel first (ksandwich build)");
  require(proc::have_program(kQemu), kQemu + " not found", "apt-get install qemu-system-x86");
  check_guest_fits(e);
  const bool kvm = accel(ctx.kernel_image).accel == "kvm";

  auto plan = guest_plan(e, ctx.arm, clock());
  const Initramfs& initramfs = initramfs_for(ctx, plan);
  fs::create_directories(ctx.point_dir);
  auto qemu_log = ctx.point_dir / "qemu.log";
  for (auto& stale : {ctx.point_dir / "console.log", ctx.point_dir / "results.jsonl", qemu_log})
    fs::remove(stale);  // a failed point run again starts clean

  std::optional<NvmeImage> nvme;
  if (storage.kind == "nvme") nvme.emplace(nvme_image_path(ctx), e.storage.size_mib);
  auto spec = spec_for(ctx, initramfs.path,
                       nvme ? std::optional<fs::path>(nvme->path()) : std::nullopt);
  proc::Command cmd;
  cmd.argv = qemu_argv(spec);
  cmd.timeout = std::chrono::seconds(e.point_timeout_s);
  cmd.log_file = qemu_log;  // QEMU's own messages; the console has its own file
  write_file(qemu_log, "$ " + shell_line(cmd.argv) + "\n");
  // Of the host CPU QEMU runs on; left alone by a run that shares the machine (its clock does
  // not depend on the frequency, and two such runs would save and restore each other's).
  machine::GovernorSetting governor(e.cpu, undisturbed_clock() ? "" : e.governor);
  auto host_env = machine::read_environment(e.cpu);
  host_env["governor_setting"] = governor.describe();
  // The phases as the guest reports them on the results port (the file QEMU writes).
  PhaseTracker phases(e);
  std::ifstream results;
  cmd.on_tick = [&] {
    if (!results.is_open()) results.open(spec.results, std::ios::binary);
    if (!results.is_open()) return;
    char buf[65536];
    results.clear();  // past the end last time: read what has been written since
    while (results.read(buf, sizeof buf) || results.gcount() > 0)
      for (auto& phase : phases.feed(std::string_view(buf, static_cast<size_t>(results.gcount()))))
        report_phase(ctx, phase);
  };
  report_phase(ctx, {std::string("booting ") + (kvm ? "(KVM)" : "(TCG)"), true});
  auto run = proc::run(cmd);  // Ctrl-C: kills QEMU, throws Interrupted; ~NvmeImage cleans up

  // Read within bounds: a patched kernel that floods its console cannot take the host's memory.
  GuestRun guest{.report = parse_guest_results(read_head_and_tail(spec.results, kMaxGuestResultsBytes)),
                 .console = read_head_and_tail(spec.console_log, kMaxConsoleBytes),
                 .timed_out = run.timed_out,
                 .timeout_s = e.point_timeout_s,
                 .qemu_exit_code = run.exit_code,
                 .qemu_output = without_command_line(read_head_and_tail(qemu_log, kMaxConsoleBytes)),
                 .expected_release = ctx.kernel_release};
  const auto& report = guest.report;
  PointResult result = guest_point_result(ctx, guest, storage, spec.console_log);

  // The host's noise controls (governor, turbo, load of the pinned CPU), then what the
  // guest read back, which is what the workload ran under.
  json env = host_env;
  env["host"] = {{"kernel_release", host_env["kernel_release"]},
                 {"kernel_cmdline", host_env["kernel_cmdline"]},
                 {"clocksource", host_env["clocksource"]}};
  env.update(guest_environment(report.guest));
  env["virtualization"] = kvm ? "kvm" : "tcg";
  env["clock"] = spec.icount ? "icount" : "wall";
  env["vcpus"] = e.qemu.vcpus;
  env["memory_mib"] = e.qemu.memory_mib;
  env["vcpu_pinning"] = e.cpu >= 0 ? json{{"host_cpu", e.cpu}, {"method", "taskset"}} : json();
  env["guest_cpu"] = guest_cpu(e);
  env["kernel_image"] = spec.kernel.string();
  env["initramfs"] = {{"path", fs::relative(initramfs.path, ctx.bundle_dir).string()},
                      {"sha256", initramfs.sha256},
                      {"size_bytes", initramfs.size_bytes},
                      {"files", initramfs.files.size()}};
  env["qemu_argv"] = cmd.argv;
  env["qemu_seconds"] = run.seconds;
  env["guest_timeline_s"] = guest_timeline(report);
  env["boot_to_agent_s"] = env["guest_timeline_s"]["agent_started"];
  result.environment = env;

  if (nvme) result.storage["backing_file"] = nvme->path().string();
  return result;
}

}  // namespace ks::boot

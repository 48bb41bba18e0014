// The QEMU backend. One point = one boot: QEMU starts the arm's bzImage with the run's
// initramfs, the guest init (guest/init.sh) makes a fresh btrfs and runs the agent, and
// every record comes back over the virtio-serial port "ksandwich.results", which QEMU
// writes to DIR/points/NN-arm/results.jsonl. The console goes to console.log beside it.
#include "boot/qemu.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "machine/machine.hpp"
#include "proc/runner.hpp"
#include "trace/kernel_log.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"
#include "util/journal.hpp"

namespace ks::boot {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const std::string kQemu = "qemu-system-x86_64";
const std::string kGuestAgent = "/usr/bin/ksandwich-agent";
const std::string kGuestFioJobs = "/ksandwich/fio";
const std::string kGuestMount = "/mnt";
// The guest keeps the unpacked initramfs (up to ~200 MiB with fio) in RAM beside brd.
constexpr uint64_t kGuestHeadroomMib = 384;

template <typename T>
void append(std::vector<T>& to, const std::vector<T>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

std::string string_field(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<double> number_field(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// "none voluntary (full)": the mode in force is the one in parentheses.
json current_choice(const std::string& choices) {
  auto open = choices.find('('), close = choices.find(')');
  if (choices.empty()) return json();
  if (open == std::string::npos || close == std::string::npos || close < open) return choices;
  return choices.substr(open + 1, close - open - 1);
}

bool is_jiffies(const std::string& clocksource) {
  return clocksource.empty() || clocksource == "jiffies" || clocksource == "refined-jiffies";
}

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> lines;
  for (auto& line : split(text, '\n')) {
    std::string clean;
    for (char c : line)
      if (c != '\r') clean += c;
    lines.push_back(std::move(clean));
  }
  while (!lines.empty() && trim(lines.back()).empty()) lines.pop_back();
  return lines;
}

std::string last_chars(const std::string& s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

// qemu.log opens with the command line the harness wrote; what QEMU said follows.
std::string without_command_line(const std::string& log) {
  if (!starts_with(log, "$ ")) return log;
  auto end = log.find('\n');
  return end == std::string::npos ? std::string() : log.substr(end + 1);
}

// The console's last few lines on one line, for a failure message: the cause first.
std::string console_ending(std::string_view console) {
  auto tail = trim(console_tail(console, 3));
  if (tail.empty()) return "the console is empty";
  std::replace(tail.begin(), tail.end(), '\n', ' ');
  return "the console ends: " + last_chars(tail, 300);
}

std::string shell_line(const std::vector<std::string>& argv) {
  std::vector<std::string> quoted;
  for (auto& word : argv) quoted.push_back(shell_quote(word));
  return join(quoted, " ");
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
  return dir / ("ksandwich-nvme-" + std::to_string(getpid()) + "-" + std::to_string(ctx.point) + ".img");
}

fs::path initramfs_path(const fs::path& bundle_dir, const std::string& plan) {
  return bundle_dir / "initramfs" / ("initramfs-" + sha256_hex(plan).substr(0, 12) + ".cpio.gz");
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

void require(bool ok, const std::string& what, const std::string& hint) {
  if (!ok) throw UserError(what, hint);
}

}  // namespace

// ---- The QEMU command line ----------------------------------------------------------

std::string qemu_option_value(std::string_view value) {
  std::string out;
  for (char c : value) {
    out += c;
    if (c == ',') out += ',';
  }
  return out;
}

std::vector<std::string> qemu_argv(const QemuSpec& s) {
  std::vector<std::string> argv;
  if (s.pin_cpu >= 0) argv = {"taskset", "-c", std::to_string(s.pin_cpu)};
  append(argv, {s.qemu,
                // Nothing QEMU would add by default: no NIC, no VGA, no monitor, no disks.
                "-nodefaults", "-no-user-config", "-display", "none",
                "-machine", std::string("q35,accel=") + (s.kvm ? "kvm" : "tcg"),
                "-cpu", cpu_model(s.kvm ? "kvm" : "tcg"),
                "-smp", std::to_string(s.vcpus),
                "-m", std::to_string(s.memory_mib),
                "-kernel", s.kernel.string(),
                "-initrd", s.initrd.string(),
                "-append", s.cmdline,
                "-serial", "file:" + s.console_log.string(),
                // reboot -f (the guest's last word) and panic=-1 both end QEMU.
                "-no-reboot",
                "-device", "virtio-serial-pci",
                "-chardev", "file,id=results,path=" + qemu_option_value(s.results.string()),
                "-device", "virtserialport,chardev=results,name=ksandwich.results"});
  if (s.nvme_image)
    append(argv, {"-drive", "file=" + qemu_option_value(s.nvme_image->string()) + ",if=none,id=nvm,format=raw",
                  "-device", "nvme,serial=ksandwich,drive=nvm"});
  return argv;
}

// ---- What the guest runs ------------------------------------------------------------

GuestStorage guest_storage(const experiment::Storage& storage) {
  if (storage.kind == "auto" || storage.kind == "brd") return {"brd", "/dev/ram0"};
  if (storage.kind == "nvme") return {"nvme", "/dev/nvme0n1"};
  throw UserError("storage kind \"" + storage.kind + "\" is not available in the qemu guest",
                  "use \"storage\": {\"kind\": \"brd\"} (a RAM disk in the guest) or \"nvme\" "
                  "(an emulated drive backed by a file)");
}

void check_guest_fits(const experiment::Experiment& e) {
  auto storage = guest_storage(e.storage);
  require(storage.kind != "brd" || e.storage.size_mib + kGuestHeadroomMib <= e.qemu.memory_mib,
          "a brd of " + std::to_string(e.storage.size_mib) + " MiB does not fit in a guest of " +
              std::to_string(e.qemu.memory_mib) + " MiB",
          "raise qemu.memory_mib to at least storage.size_mib + " + std::to_string(kGuestHeadroomMib));
}

std::string guest_cmdline(const experiment::Experiment& e, const experiment::Arm& arm) {
  // random.trust_cpu=on seeds the CRNG from RDRAND at boot: the guest has no other entropy,
  // and without it mkfs.btrfs (libuuid's getrandom) waits ~6 s under TCG on every point.
  std::vector<std::string> words{"console=ttyS0", "panic=-1", "preempt=none", "random.trust_cpu=on"};
  if (guest_storage(e.storage).kind == "brd") {
    words.push_back("brd.rd_nr=1");
    words.push_back("brd.rd_size=" + std::to_string(e.storage.size_mib * 1024));  // KiB
  }
  append(words, arm.cmdline);
  return join(words, " ");
}

int guest_cpu(const experiment::Experiment& e) {
  return e.cpu >= 0 ? static_cast<int>(e.qemu.vcpus) - 1 : -1;
}

std::string shell_quote(std::string_view word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string guest_plan(const experiment::Experiment& e, const experiment::Arm& arm) {
  auto storage = guest_storage(e.storage);
  auto mkfs_options = e.storage.mkfs_options;
  append(mkfs_options, arm.extra_mkfs_options);
  auto mount_options = e.storage.mount_options;
  append(mount_options, arm.extra_mount_options);
  experiment::Experiment in_guest = e;
  in_guest.cpu = guest_cpu(e);

  std::string plan =
      "# What this guest runs: written by the harness, sourced by /init (guest/init.sh).\n"
      "KS_STORAGE_KIND=" + shell_quote(storage.kind) + "\n"
      "KS_DEVICE=" + shell_quote(storage.device) + "\n"
      "KS_MOUNT_OPTIONS=" + shell_quote(join(mount_options, ",")) + "\n\n"
      "ks_mkfs() {\n  mkfs.btrfs -f";
  for (auto& option : mkfs_options) plan += " " + shell_quote(option);
  plan += " \"$KS_DEVICE\"\n}\n\nks_workloads() {\n";
  for (auto& w : e.workloads) {
    auto argv = agent_argv(kGuestAgent, w, in_guest, kGuestMount + "/" + w.id(), kGuestFioJobs);
    plan += "  run_workload " + shell_quote(w.id()) + " " + shell_line(argv) + "\n";
  }
  plan += "}\n\n";

  std::vector<std::string> functions;
  for (auto& t : direct_hit_targets(e, arm.name)) functions.push_back(t.function);
  plan += "KS_TRACE_FUNCTIONS=" + shell_quote(join(functions, " ")) + "\n"
          "ks_direct_hit_pass() {\n";
  auto pass = direct_hit_pass(in_guest);
  for (auto& w : pass.workloads) {
    auto id = w.id() + "-direct-hit";
    auto argv = agent_argv(kGuestAgent, w, pass, kGuestMount + "/" + id, kGuestFioJobs);
    plan += "  run_pass " + shell_quote(id) + " " + shell_line(argv) + "\n";
  }
  return plan + "}\n";
}

// ---- What comes back ----------------------------------------------------------------

GuestReport parse_guest_results(std::string_view text) {
  GuestReport report;
  std::string workload;  // the agent's lines belong to the last "workload" record
  std::string trace_file;  // the tracefs file the last "text" record came from
  for (auto& line : split(text, '\n')) {
    if (trim(line).empty()) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const json::parse_error&) {
      ++report.unreadable_lines;
      continue;
    }
    if (!j.is_object()) {
      ++report.unreadable_lines;
      continue;
    }
    auto type = string_field(j, "type");
    if (type == "guest") {
      report.guest = j;
    } else if (type == "storage") {
      report.storage = j;
    } else if (type == "workload") {
      workload = string_field(j, "id");
      if (!report.agent_start_uptime_s) report.agent_start_uptime_s = number_field(j, "uptime_s");
    } else if (type == "workload_exit") {
      workload.clear();
      report.workloads_done_uptime_s = number_field(j, "uptime_s");
    } else if (type == "trace") {
      if (!report.trace) report.trace.emplace();
      report.trace->method = string_field(j, "method");
      report.trace->failure = string_field(j, "failure");
    } else if (type == "text") {  // one line of a file the guest read
      auto file = string_field(j, "file");
      auto text = string_field(j, "text") + "\n";
      if (file == "dmesg") {
        report.kernel_log = report.kernel_log.value_or("") + text;
        continue;
      }
      if (!report.trace) report.trace.emplace();
      if (file == "available_filter_functions") report.trace->available_filter_functions += text;
      else if (file == "set_ftrace_filter") report.trace->set_ftrace_filter += text;
      else if (starts_with(file, "function")) {  // trace_stat/function<cpu>, one text per CPU
        if (file != trace_file) report.trace->profile_stats.emplace_back();
        report.trace->profile_stats.back() += text;
      }
      trace_file = file;
    } else if (type == "exit") {
      auto status = j.find("status");
      report.exit_status = status != j.end() && status->is_number_integer() ? status->get<int>() : -1;
      report.exit_reason = string_field(j, "reason");
      report.exit_uptime_s = number_field(j, "uptime_s");
    } else if (!workload.empty()) {
      j["workload_id"] = workload;
      report.agent_records.push_back(std::move(j));
    } else {
      ++report.unreadable_lines;  // an agent line outside any workload: not ours to place
    }
  }
  return report;
}

json guest_environment(const json& g) {
  json env{{"kernel_release", string_field(g, "kernel_release")},
           {"kernel_version", string_field(g, "kernel_version")},
           {"kernel_cmdline", string_field(g, "kernel_cmdline")},
           {"preemption", current_choice(string_field(g, "preempt"))},
           {"clocksource", string_field(g, "clocksource")},
           {"guest_cpus_online", string_field(g, "cpus")}};
  json available = json::array();
  for (auto& name : split(string_field(g, "available_clocksource"), ' '))
    if (!trim(name).empty()) available.push_back(trim(name));
  env["available_clocksources"] = available;
  // "MemTotal:        2015000 kB"
  auto mem = split(trim(string_field(g, "mem_total")), ' ');
  std::erase_if(mem, [](const std::string& w) { return w.empty(); });
  env["guest_mem_total_mib"] = mem.size() >= 2 ? json(std::stoull(mem[1]) / 1024) : json();
  return env;
}

std::optional<std::string> guest_failure(const GuestRun& run) {
  const auto& report = run.report;
  for (auto& line : lines_of(run.console))
    if (line.find("Kernel panic") != std::string::npos)
      return "guest kernel panicked: " + trim(line);
  if (run.timed_out)
    return "guest did not finish within point_timeout_s = " + std::to_string(run.timeout_s) +
           " s; QEMU was killed; " + console_ending(run.console);
  if (report.guest.is_null()) {
    if (run.qemu_exit_code != 0 && !trim(run.qemu_output).empty())
      return "QEMU exited " + std::to_string(run.qemu_exit_code) + " before the guest reported: " +
             trim(last_chars(trim(run.qemu_output), 800));
    return "the guest never reported (QEMU exited " + std::to_string(run.qemu_exit_code) +
           "): init did not start or found no results port; " + console_ending(run.console);
  }
  auto clocksource = string_field(report.guest, "clocksource");
  if (is_jiffies(clocksource))
    return "guest clocksource is '" + clocksource +
           "': a 1 ms tick cannot time these workloads; give the kernel a real clock (ACPI, HPET, "
           "HPET_TIMER, X86_PM_TIMER as in configs/kernel/btrfs-bench.config) and no clocksource= override";
  auto release = string_field(report.guest, "kernel_release");
  if (!run.expected_release.empty() && release != run.expected_release)
    return "guest runs kernel " + release + ", expected " + run.expected_release + " (the arm's build)";
  if (!report.exit_status)
    return "the guest stopped without an exit record (QEMU exited " + std::to_string(run.qemu_exit_code) +
           "; see the console tail)";
  if (*report.exit_status != 0)
    return "guest: " + report.exit_reason + " (exit status " + std::to_string(*report.exit_status) + ")";
  if (run.qemu_exit_code != 0)
    return "QEMU exited " + std::to_string(run.qemu_exit_code) + ": " + trim(last_chars(run.qemu_output, 800));
  return std::nullopt;
}

std::string console_tail(std::string_view console, size_t lines) {
  auto all = lines_of(console);
  size_t from = all.size() > lines ? all.size() - lines : 0;
  return join(std::vector<std::string>(all.begin() + static_cast<long>(from), all.end()), "\n");
}

std::vector<std::string> console_findings(std::string_view console) {
  static const char* kSigns[] = {"WARNING:", "BUG:", "Oops", "Kernel panic", "general protection fault",
                                 "INFO: task", "Call Trace:"};
  std::vector<std::string> found;
  for (auto& line : lines_of(console))
    for (const char* sign : kSigns)
      if (line.find(sign) != std::string::npos) {
        found.push_back(trim(line));
        break;
      }
  return found;
}

// ---- The backend --------------------------------------------------------------------

QemuBackend::QemuBackend(BackendOptions options) : options_(std::move(options)) {}

void QemuBackend::preflight(const std::optional<fs::path>& control_kernel) {
  accel_.reset();
  accel(control_kernel);
}

const AccelChoice& QemuBackend::accel(const std::optional<fs::path>& kernel) {
  // A KVM that passed only the firmware probe is asked again with a kernel once there is one.
  if (accel_ && kernel && accel_->accel == "kvm" && !accel_kernel_probed_) accel_.reset();
  if (!accel_) {
    accel_kernel_probed_ = kernel.has_value();
    accel_ = choose_accel(options_.accel, options_.cache_dir, kernel);
    std::fprintf(stderr, "ksandwich: QEMU accelerator: %s (%s%s)\n", accel_->accel.c_str(),
                 accel_->reason.c_str(), accel_->remembered ? "; remembered from an earlier probe" : "");
  }
  return *accel_;
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
  s.kvm = accel_ ? accel_->accel == "kvm" : options_.accel == "kvm";
  s.vcpus = e.qemu.vcpus;
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
  auto plan = guest_plan(ctx.experiment, ctx.arm);
  std::optional<fs::path> nvme;
  if (guest_storage(ctx.experiment.storage).kind == "nvme") nvme = nvme_image_path(ctx);
  auto spec = spec_for(ctx, initramfs_path(ctx.bundle_dir, plan), nvme);
  std::string accel_note =
      accel_ ? "# accelerator: " + accel_->accel + " (" + accel_->reason + ")\n"
             : "# accelerator: " + options_.accel +
                   (options_.accel == "auto" ? " (a KVM probe decides when the run starts; shown with tcg)" : "") + "\n";
  return accel_note + "$ " + shell_line(qemu_argv(spec)) + "\n# /ksandwich/plan.sh in the initramfs:\n" + plan;
}

const Initramfs& QemuBackend::initramfs_for(const PointContext& ctx, const std::string& plan) {
  if (auto it = initramfs_by_plan_.find(plan); it != initramfs_by_plan_.end()) return it->second;
  InitramfsSpec spec;
  spec.agent = options_.agent;
  auto mkfs = proc::find_program("mkfs.btrfs");
  require(mkfs.has_value(), "mkfs.btrfs not found: the guest needs it", "apt-get install btrfs-progs");
  spec.programs.push_back(*mkfs);
  bool needs_fio = std::any_of(ctx.experiment.workloads.begin(), ctx.experiment.workloads.end(),
                               [](auto& w) { return w.name == "fio"; });
  if (needs_fio) {  // fio and its ~70 libraries add ~35 MB: only when a workload runs it
    auto fio = proc::find_program("fio");
    require(fio.has_value(), "fio not found: the guest needs it for the fio workload", "apt-get install fio");
    spec.programs.push_back(*fio);
  }
  spec.fio_jobs_dir = options_.fio_jobs_dir;
  spec.init_script = guest_init_script();
  spec.plan = plan;
  std::fprintf(stderr, "ksandwich: building the guest initramfs (busybox, agent, mkfs.btrfs%s)\n",
               needs_fio ? ", fio" : "");
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

  auto plan = guest_plan(e, ctx.arm);
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
  machine::GovernorSetting governor(e.cpu, e.governor);  // of the host CPU QEMU runs on
  auto host_env = machine::read_environment(e.cpu);
  host_env["governor_setting"] = governor.describe();
  auto run = proc::run(cmd);  // Ctrl-C: kills QEMU, throws Interrupted; ~NvmeImage cleans up

  GuestRun guest{.report = parse_guest_results(try_read_file(spec.results).value_or("")),
                 .console = try_read_file(spec.console_log).value_or(""),
                 .timed_out = run.timed_out,
                 .timeout_s = e.point_timeout_s,
                 .qemu_exit_code = run.exit_code,
                 .qemu_output = without_command_line(try_read_file(qemu_log).value_or("")),
                 .expected_release = ctx.kernel_release};
  const auto& report = guest.report;

  PointResult result;
  result.log = fs::relative(spec.console_log, ctx.bundle_dir).string();
  result.kernel_release = string_field(report.guest, "kernel_release");
  result.agent_records = report.agent_records;

  // The host's noise controls (governor, turbo, load of the pinned CPU), then what the
  // guest read back, which is what the workload ran under.
  json env = host_env;
  env["host"] = {{"kernel_release", host_env["kernel_release"]},
                 {"kernel_cmdline", host_env["kernel_cmdline"]},
                 {"clocksource", host_env["clocksource"]}};
  env.update(guest_environment(report.guest));
  env["virtualization"] = kvm ? "kvm" : "tcg";
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
  // Guest uptime at each step: where a slow boot spends its time.
  auto at = [](std::optional<double> v) { return v ? json(*v) : json(); };
  env["guest_timeline_s"] = {{"init_reported", at(number_field(report.guest, "uptime_s"))},
                             {"filesystem_ready", at(number_field(report.storage, "uptime_s"))},
                             {"agent_started", at(report.agent_start_uptime_s)},
                             {"workloads_done", at(report.workloads_done_uptime_s)},
                             {"exit", at(report.exit_uptime_s)}};
  env["boot_to_agent_s"] = at(report.agent_start_uptime_s);
  result.environment = env;

  auto mkfs_options = e.storage.mkfs_options;
  append(mkfs_options, ctx.arm.extra_mkfs_options);
  auto mount_options = e.storage.mount_options;
  append(mount_options, ctx.arm.extra_mount_options);
  json storage_json{{"kind", storage.kind},
                    {"requested_kind", e.storage.kind},
                    {"device", storage.device},
                    {"size_mib", e.storage.size_mib},
                    {"mkfs_options", mkfs_options},
                    {"mount_options", mount_options}};
  if (report.storage.is_object()) {
    for (auto& [key, value] : report.storage.items())
      if (key != "type" && key != "uptime_s") storage_json[key] = value;
    if (auto bytes = number_field(report.storage, "size_bytes"))
      storage_json["size_mib"] = static_cast<uint64_t>(*bytes) >> 20;  // read back, not assumed
  }
  if (nvme) storage_json["backing_file"] = nvme->path().string();
  result.storage = storage_json;

  // Kernel health from the guest's own dmesg (not the console, where mkfs and the agent
  // also write). A guest that died before sending it is a failed point anyway.
  if (report.kernel_log) {
    result.health = trace::kernel_health("", trace::split_log_lines(*report.kernel_log));
  } else {
    result.health = {{"error", "the guest sent no kernel log"}};
  }
  result.health["console_findings"] = console_findings(guest.console);
  result.health["unreadable_result_lines"] = report.unreadable_lines;
  if (auto targets = direct_hit_targets(e, ctx.arm.name); !targets.empty()) {
    trace::TraceCapture capture;
    capture.failure = "the guest sent no direct-hit records (the point ended before the pass)";
    result.direct_hit = trace::to_json(trace::count_calls(targets, report.trace.value_or(capture)));
  }
  if (auto failure = guest_failure(guest)) {
    result.status = "failed";
    result.failure = *failure;
    result.console_tail = console_tail(guest.console);
  }
  return result;
}

}  // namespace ks::boot

// The host backend: runs every point on the kernel that is booted now. Arms may differ
// only by what needs no new kernel: mkfs options, mount options, sysfs/sysctl knobs.
#include "boot/host.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <cstdio>
#include <random>

#include "boot/knobs.hpp"
#include "boot/phases.hpp"
#include "machine/doctor.hpp"
#include "machine/machine.hpp"
#include "proc/runner.hpp"
#include "storage/storage.hpp"
#include "trace/function_counter.hpp"
#include "trace/kernel_log_watch.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::boot {
namespace {

using nlohmann::json;

// A workload's directory on the mount. Its name is a plain name (the parser made sure);
// checked again here, as the last step before the directory is made.
fs::path workload_dir(const fs::path& mount_point, const std::string& id, const std::string& suffix = {}) {
  if (!experiment::is_plain_name(id))
    throw UserError("workload label \"" + id + "\" is not a plain name",
                    "use 1 to 64 of A-Z a-z 0-9 . _ - (not \".\" or \"..\")");
  return mount_point / (id + suffix);
}

std::vector<json> parse_agent_lines(const std::string& out) {
  std::vector<json> records;
  for (auto& line : split(out, '\n')) {
    if (trim(line).empty()) continue;
    try {
      records.push_back(json::parse(line));
    } catch (const json::parse_error&) {
      // Not JSON: the agent printed something else; it stays in the log.
    }
  }
  return records;
}

}  // namespace

HostBackend::HostBackend(BackendOptions options) : options_(std::move(options)) {}

void HostBackend::check_machine(const experiment::Experiment& e) const {
  if (geteuid() != 0)
    throw UserError("the host backend formats and mounts a device, which needs root",
                    "run ksandwich as root (sudo)");
  machine::require_program("mkfs.btrfs", "btrfs-progs", "to create a fresh btrfs for every point", options_.data_dir);
  if (!machine::have_filesystem("btrfs"))
    throw UserError("the running kernel has no btrfs", "load it: modprobe btrfs");
  for (auto& [name, arm] : e.arms)
    for (auto& [path, value] : arm.sysfs) {
      if (access(path.c_str(), W_OK) != 0)
        throw UserError("experiment: /arms/" + name + "/sysfs: " + path + " is not writable here",
                        "check the knob exists on this kernel");
      // The path was a tunable as written; where its links lead must be one too.
      std::error_code ec;
      auto real = fs::canonical(path, ec).string();
      if (ec || !experiment::is_tunable_knob(real))
        throw UserError("experiment: /arms/" + name + "/sysfs: " + path + " leads to " + real +
                            ", which is not a knob an experiment may set",
                        "name the tunable itself");
    }
  bool required_hits = std::any_of(e.direct_hits.begin(), e.direct_hits.end(), [](auto& d) { return d.required; });
  if (required_hits) {
    auto tracing = trace::probe_tracing();
    if (tracing.method == trace::kNoTracing)
      throw UserError("the experiment requires direct hits, but this kernel cannot count function calls: " +
                          tracing.reason,
                      "use the qemu backend (its kernel has the function tracer), or mark the "
                      "direct_hits \"required\": false");
  }
  if (e.storage.kind == "device") storage::guard_device(e.storage.device, e.storage.allow_overwrite);
  else storage::resolve_kind(e.storage.kind);  // throws when the kind is not available
}

json HostBackend::machine() {
  json m = machine::describe_host();
  m["virtualization"] = "none";  // the workload runs on this kernel, no guest
  return m;
}

std::string HostBackend::describe_point(const PointContext& ctx) const {
  const auto& e = ctx.experiment;
  auto with_arm = [](std::vector<std::string> options, const std::vector<std::string>& extra) {
    options.insert(options.end(), extra.begin(), extra.end());
    return options.empty() ? std::string("none") : join(options, " ");
  };
  std::string text = "# a fresh btrfs on " + e.storage.kind + " (" + std::to_string(e.storage.size_mib) +
                     " MiB; mkfs.btrfs options: " + with_arm(e.storage.mkfs_options, ctx.arm.extra_mkfs_options) +
                     "; mount options: " + with_arm(e.storage.mount_options, ctx.arm.extra_mount_options) +
                     "), mounted at <mnt>\n";
  // What the point writes on this machine, and puts back byte for byte after it.
  for (auto& [path, value] : ctx.arm.sysfs) text += "# knob " + path + " = " + one_line(value) + " (put back after)\n";
  text += "# then:\n";
  for (auto& w : e.workloads)
    text += "$ " + join(agent_argv(options_.agent.string(), w, e, "<mnt>/" + w.id(),
                                   options_.fio_jobs_dir.string()), " ") + "\n";
  return text;
}

PointResult HostBackend::run_point(const PointContext& ctx) {
  const auto& e = ctx.experiment;
  PointResult result;
  result.kernel_release = machine::kernel_release();
  fs::create_directories(ctx.point_dir);
  auto log_path = ctx.point_dir / "agent.log";
  result.log = fs::relative(log_path, ctx.bundle_dir).string();

  trace::KernelLogWatch kernel_log;
  kernel_log.begin("point " + std::to_string(ctx.point));
  KnobSetting knobs(ctx.arm.sysfs);
  machine::GovernorSetting governor(e.cpu, e.governor);
  result.environment = machine::read_environment(e.cpu);
  result.environment["sysfs"] = knobs.applied();
  result.environment["governor_setting"] = governor.describe();

  storage::Request request;
  request.kind = e.storage.kind;
  request.size_mib = e.storage.size_mib;
  request.device = e.storage.device;
  request.allow_overwrite = e.storage.allow_overwrite;
  request.label = storage::run_label(storage::run_id(ctx.bundle_dir));
  request.mkfs_options = e.storage.mkfs_options;
  request.mkfs_options.insert(request.mkfs_options.end(), ctx.arm.extra_mkfs_options.begin(),
                              ctx.arm.extra_mkfs_options.end());
  request.mount_options = e.storage.mount_options;
  request.mount_options.insert(request.mount_options.end(), ctx.arm.extra_mount_options.begin(),
                               ctx.arm.extra_mount_options.end());

  PhaseTracker phases(e);
  report_phase(ctx, {"mkfs", true});
  std::unique_ptr<storage::Filesystem> filesystem;
  try {
    filesystem = storage::Filesystem::create(request);
  } catch (const SystemError& err) {
    result.status = "failed";
    result.failure = std::string("storage: ") + err.what();
    return result;
  }
  result.storage = filesystem->describe();

  for (auto& workload : e.workloads) {
    auto dir = workload_dir(filesystem->mount_point(), workload.id());
    fs::create_directories(dir);
    proc::Command cmd;
    cmd.argv = agent_argv(options_.agent.string(), workload, e, dir.string(),
                          options_.fio_jobs_dir.string());
    cmd.timeout = std::chrono::seconds(e.point_timeout_s);
    if (auto phase = phases.on_record({{"type", "workload"}, {"id", workload.id()}})) report_phase(ctx, *phase);
    cmd.on_stdout = [&](std::string_view chunk) {
      for (auto& phase : phases.feed(chunk)) report_phase(ctx, phase);
    };
    auto run = proc::run(cmd);
    write_file_append(log_path, "$ " + join(cmd.argv, " ") + "\n" + run.err);
    for (auto& record : parse_agent_lines(run.out)) {
      record["workload_id"] = workload.id();
      result.agent_records.push_back(std::move(record));
    }
    if (!run.ok()) {
      result.status = "failed";
      result.failure = "workload " + workload.id() + ": " + run.describe();
      break;
    }
  }

  // After the timed rounds, never during them: count calls to the functions the patch
  // should hit, in a separate short pass of the same workloads.
  auto targets = direct_hit_targets(e, ctx.arm.name);
  if (result.status == "ok" && !targets.empty()) {
    auto pass = direct_hit_pass(e);
    report_phase(ctx, {"tracing", true});
    trace::FunctionCounter counter(targets);
    for (auto& workload : pass.workloads) {
      auto dir = workload_dir(filesystem->mount_point(), workload.id(), "-direct-hit");
      fs::create_directories(dir);
      proc::Command cmd;
      cmd.argv = agent_argv(options_.agent.string(), workload, pass, dir.string(),
                            options_.fio_jobs_dir.string());
      cmd.timeout = std::chrono::seconds(e.point_timeout_s);
      auto run = proc::run(cmd);
      write_file_append(log_path, "$ " + join(cmd.argv, " ") + "  # direct-hit pass\n" + run.err);
    }
    result.direct_hit = trace::to_json(counter.stop());
  }
  filesystem.reset();  // unmount first: the kernel log must cover the whole point
  result.health = kernel_log.end();
  return result;
}

}  // namespace ks::boot

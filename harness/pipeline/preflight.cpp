#include "pipeline/preflight.hpp"

#include <sched.h>
#include <algorithm>
#include <unistd.h>

#include "boot/qemu.hpp"
#include "machine/doctor.hpp"
#include "machine/machine.hpp"
#include "proc/runner.hpp"
#include "storage/storage.hpp"
#include "trace/function_counter.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::pipeline {

namespace {


bool contains_word(const std::string& words, const std::string& word) {
  for (auto& w : split(trim(words), ' '))
    if (w == word) return true;
  return false;
}

void need_program(const std::string& program, const std::string& package, const std::string& why,
                  const RunOptions& options) {
  if (!proc::have_program(program))
    throw UserError(program + " is not installed; it is needed " + why,
                    machine::install_hint(package, machine::is_source_tree(options.repo_dir)));
}

}  // namespace

void preflight(const experiment::Experiment& e, const RunOptions& options) {
  if (!fs::exists(options.agent))
    throw UserError("the workload agent was not found at " + options.agent.string(),
                    "build it: cmake --build build --target ksandwich-agent");
  for (auto& w : e.workloads) {
    if (w.name == "fio") {
      need_program("fio", "fio", "by the fio workload", options);
      auto job = options.repo_dir / "workloads/fio" / w.fio_job;
      if (!fs::exists(job))
        throw UserError("the fio job file " + job.string() + " does not exist",
                        "name a file in workloads/fio/ in the experiment's \"job\"");
    }
  }
  if (!e.governor.empty()) {
    // Where cpufreq exists a governor it does not offer is a typo, not a noise control
    // the machine lacks (which the bundle reports and the run survives).
    auto cpu = std::to_string(e.cpu < 0 ? 0 : e.cpu);
    auto offered = try_read_file("/sys/devices/system/cpu/cpu" + cpu + "/cpufreq/scaling_available_governors");
    if (offered && !contains_word(*offered, e.governor))
      throw UserError("experiment: /governor: \"" + e.governor + "\" is not offered by CPU " + cpu,
                      "use one of: " + trim(*offered));
  }
  if (e.cpu >= 0) {
    cpu_set_t allowed;
    sched_getaffinity(0, sizeof allowed, &allowed);
    if (e.cpu >= CPU_SETSIZE || !CPU_ISSET(e.cpu, &allowed))
      throw UserError("experiment: /cpu: CPU " + std::to_string(e.cpu) + " is not available here",
                      "pick a CPU from 0 to " + std::to_string(sysconf(_SC_NPROCESSORS_ONLN) - 1) +
                          ", or -1 for no pinning");
  }
  if (e.backend == "host") {
    if (geteuid() != 0)
      throw UserError("the host backend formats and mounts a device, which needs root",
                      "run ksandwich as root (sudo)");
    need_program("mkfs.btrfs", "btrfs-progs", "to create a fresh btrfs for every point", options);
    if (!machine::have_filesystem("btrfs"))
      throw UserError("the running kernel has no btrfs", "load it: modprobe btrfs");
    for (auto& [name, arm] : e.arms)
      for (auto& [path, value] : arm.sysfs)
        if (access(path.c_str(), W_OK) != 0)
          throw UserError("experiment: /arms/" + name + "/sysfs: " + path + " is not writable here",
                          "check the knob exists on this kernel");
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
  if (e.backend == "qemu") {
    need_program("qemu-system-x86_64", "qemu-system-x86", "to boot the kernels", options);
    need_program("mkfs.btrfs", "btrfs-progs", "inside the guest (it is copied into the initramfs)", options);
    if (!fs::exists(boot::kBusybox))
      throw UserError(std::string(boot::kBusybox) + " is missing; the guest's shell and tools are busybox",
                      machine::install_hint("busybox-static", machine::is_source_tree(options.repo_dir)));
    boot::check_guest_fits(e);  // brd or nvme, and a brd that fits in the guest's memory
  }
}

}  // namespace ks::pipeline

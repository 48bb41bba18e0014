#include "pipeline/preflight.hpp"

#include <sched.h>
#include <unistd.h>

#include "machine/doctor.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::pipeline {

namespace {

bool contains_word(const std::string& words, const std::string& word) {
  for (auto& w : split(trim(words), ' '))
    if (w == word) return true;
  return false;
}

}  // namespace

void preflight(const experiment::Experiment& e, const RunOptions& options) {
  if (!fs::exists(options.agent))
    throw UserError("the workload agent was not found at " + options.agent.string(),
                    "build it: cmake --build build --target ksandwich-agent");
  for (auto& w : e.workloads) {
    if (w.name == "fio") {
      machine::require_program("fio", "fio", "by the fio workload", options.repo_dir);
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
}

}  // namespace ks::pipeline

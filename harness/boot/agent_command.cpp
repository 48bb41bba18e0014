#include <algorithm>

#include "boot/backend.hpp"
#include "util/error.hpp"

namespace ks::boot {

std::vector<trace::Target> direct_hit_targets(const experiment::Experiment& e, const std::string& arm) {
  std::vector<trace::Target> targets;
  for (auto& d : e.direct_hits)
    if (d.arms.empty() || std::find(d.arms.begin(), d.arms.end(), arm) != d.arms.end())
      targets.push_back({d.function, d.required});
  return targets;
}

experiment::Experiment direct_hit_pass(experiment::Experiment e) {
  e.rounds = 1;
  e.warmup_rounds = 0;
  for (auto& w : e.workloads) {
    w.ops = std::min<uint64_t>(w.ops, 1000);
    w.runtime_s = std::min(w.runtime_s, 1.0);
    if (w.ios > 0) w.ios = std::max<uint64_t>(std::min<uint64_t>(w.ios, 1000), w.jobs);
    w.size_mib = std::min<uint64_t>(w.size_mib, 64);
  }
  return e;
}

std::vector<std::string> agent_argv(const std::string& agent, const experiment::Workload& w,
                                    const experiment::Experiment& e, const std::string& dir,
                                    const std::string& fio_jobs_dir, bool canary) {
  if (!experiment::is_plain_name(w.id()))
    throw UserError("workload label \"" + w.id() + "\" is not a plain name",
                    "use 1 to 64 of A-Z a-z 0-9 . _ - (not \".\" or \"..\")");
  std::vector<std::string> argv{agent, w.name, "--dir", dir,
                                "--rounds", std::to_string(e.rounds),
                                "--warmup", std::to_string(e.warmup_rounds),
                                "--cpu", std::to_string(e.cpu)};
  auto add = [&](const char* flag, auto value) {
    argv.push_back(flag);
    if constexpr (std::is_same_v<decltype(value), double>) {
      std::string s = std::to_string(value);
      s.erase(s.find_last_not_of('0') + 1);  // 5.000000 -> 5.
      if (s.back() == '.') s.pop_back();
      argv.push_back(s);
    } else {
      argv.push_back(std::to_string(value));
    }
  };
  if (w.name == "clone" || w.name == "dedupe") {
    add("--ops", w.ops);
    add("--range-bytes", w.range_bytes);
  } else if (w.name == "dio-randwrite" || w.name == "fio") {
    add("--iodepth", w.iodepth);
    add("--jobs", w.jobs);
    add("--file-size-mib", w.file_size_mib);
    if (w.ios > 0)
      add("--ios", w.ios);
    else
      add("--runtime-s", w.runtime_s);
    if (w.name == "fio") {
      // A name in the shipped folder, never a path (the parser refuses one; this is the
      // last line before fio reads it).
      if (!experiment::is_plain_name(w.fio_job))
        throw UserError("fio job \"" + w.fio_job + "\" is not the name of a file in workloads/fio/",
                        "name a job file in workloads/fio/ without a directory, e.g. \"dio-randwrite.fio\"");
      argv.push_back("--job");
      argv.push_back(fio_jobs_dir + "/" + w.fio_job);
    }
  } else if (w.name == "buffered-write") {
    add("--size-mib", w.size_mib);
    add("--block-kib", w.block_kib);
  }
  if (!canary) argv.push_back("--no-canary");
  return argv;
}

}  // namespace ks::boot

// fio: runs fio on a job file (workloads/fio/*.fio) once per round and keeps fio's JSON.
// The job reads its scaled parameters from environment variables (fio substitutes ${VAR}
// in job files), so the same file also runs under plain fio; see dio-randwrite.fio.
// A round's elapsed_ns is the whole fio run (start-up, layout, ramp) on the agent's clocks;
// its iops and bytes_per_s are fio's own figures for the measured window.
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "agent/clock.hpp"
#include "agent/fio_output.hpp"
#include "agent/scratch.hpp"
#include "agent/workload.hpp"
#include "proc/runner.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::agent {
namespace {

// fio's time values default to seconds and take unit suffixes: "5", or "1500ms".
std::string fio_seconds(double seconds) {
  auto ms = std::llround(seconds * 1000);
  return ms % 1000 == 0 ? std::to_string(ms / 1000) : std::to_string(ms) + "ms";
}

class Fio final : public Workload {
 public:
  explicit Fio(const Options& o)
      : dir_(fs::absolute(o.dir)),
        nocow_dir_(dir_ / "nocow"),
        job_(fs::absolute(o.job)),
        fio_(proc::find_program(o.fio).value_or(o.fio)),
        runtime_s_(o.runtime_s),
        env_{{"KS_DIR", dir_.string()},
             {"KS_IODEPTH", std::to_string(o.iodepth)},
             {"KS_NUMJOBS", std::to_string(o.jobs)},
             {"KS_SIZE", std::to_string(o.file_size_mib) + "m"},  // fio: "m" is MiB, "MiB" is 10^6
             {"KS_RUNTIME", fio_seconds(o.runtime_s)}},
        params_{{"job", job_.string()}, {"fio", fio_.string()},   {"iodepth", o.iodepth},
                {"jobs", o.jobs},       {"file_size_mib", o.file_size_mib}, {"runtime_s", o.runtime_s}} {}

  Metric metric() const override { return Metric::Throughput; }

  Json params() const override {
    Json p = params_;
    Json env = Json::object();
    for (auto& [name, value] : env_) env[name] = value;
    p["env"] = env;
    return p;
  }

  void prepare() override {
    // Jobs write into ${KS_DIR}/nocow, like the seed's `chattr +C /mnt/test/nocow`.
    make_nocow_dir(nocow_dir_);
    proc::Command version;
    version.argv = {fio_.string(), "--version"};
    version.timeout = std::chrono::seconds(30);
    params_["fio_version"] = trim(proc::run(version).out);
    // fio forks a process per job. Killed (ksandwich's SIGKILL reaches the agent, and the
    // runner passes it on to fio), fio would die but its jobs would go on writing, keeping
    // the mount busy for cleanup. In a PID namespace of their own whose first process dies
    // with the agent they all end: util-linux's unshare --kill-child, where it works (root,
    // a kernel with PID namespaces; a guest's may have none).
    const std::vector<std::string> own_namespace = {"unshare", "--pid", "--fork", "--kill-child"};
    proc::Command probe;
    probe.argv = own_namespace;
    probe.argv.push_back("true");
    probe.timeout = std::chrono::seconds(10);
    if (::geteuid() == 0 && proc::have_program("unshare") && proc::run(probe).ok()) launcher_ = own_namespace;
    params_["fio_own_pid_namespace"] = !launcher_.empty();
  }

  RoundResult run_round() override {
    struct Cleanup {
      const fs::path& dir;
      ~Cleanup() { remove_and_sync(dir, regular_files_in(dir)); }
    } cleanup{nocow_dir_};

    proc::Command command;
    command.argv = launcher_;
    command.argv.insert(command.argv.end(), {fio_.string(), "--output-format=json", job_.string()});
    // Generous: layout, ramp and start delay come on top of the runtime.
    command.timeout = std::chrono::seconds(300 + std::llround(10 * runtime_s_));
    command.env = env_;
    Stopwatch watch;
    watch.start();
    proc::Result result = proc::run(command);
    RoundResult r;
    r.clock = watch.stop();

    auto json = parse_fio_output(result.out);
    if (!result.ok()) r.error = result.describe();
    if (!json) {
      if (!r.error) r.error = "fio printed no JSON: " + result.describe();
      return r;
    }
    r.fio = *json;
    try {
      FioSummary s = summarize_fio(*json);
      r.ops = s.total_ios;
      r.bytes = s.io_bytes;
      r.iops = s.iops;
      r.bytes_per_s = s.bw_bytes;
      r.unexpected = s.jobs_with_error;
      if (s.jobs_with_error > 0) r.unexpected_detail = "fio " + s.first_error;
      if (!r.error && s.total_ios == 0) r.error = "fio completed no writes";
    } catch (const std::exception& e) {
      if (!r.error) r.error = e.what();
    }
    return r;
  }

 private:
  fs::path dir_;
  fs::path nocow_dir_;
  fs::path job_;
  fs::path fio_;
  double runtime_s_;
  std::vector<std::pair<std::string, std::string>> env_;
  std::vector<std::string> launcher_;  // what fio runs under: its own PID namespace, or nothing
  Json params_;
};

}  // namespace

std::unique_ptr<Workload> make_fio(const Options& options) { return std::make_unique<Fio>(options); }

}  // namespace ks::agent

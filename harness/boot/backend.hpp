#pragma once
// A backend runs one point: boots (or reuses) a kernel, makes a fresh btrfs, runs the
// workloads with the agent and reads back what was in force. Registered in one table.
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "experiment/experiment.hpp"
#include "trace/direct_hit.hpp"

namespace ks::boot {

namespace fs = std::filesystem;

struct PointContext {
  const experiment::Experiment& experiment;
  const experiment::Arm& arm;
  int point = 0;
  int block = 0;
  fs::path bundle_dir;                 // DIR
  fs::path point_dir;                  // DIR/points/NN-arm: logs of this point
  std::optional<fs::path> kernel_image;  // qemu: the arm's bzImage
  std::string kernel_release;            // qemu: expected release of that image
  // Told what the point is doing, for the progress line: each phase as it starts
  // ("booting", "mkfs", "workload 2 of 3: dedupe", "tracing", "done"; MILESTONE true) and
  // the rounds within a workload (", round 4 of 10"; MILESTONE false). Empty: nobody listens.
  std::function<void(const std::string& phase, bool milestone)> phase = {};
};

struct PointResult {
  std::string status = "ok";   // ok | failed
  std::string failure;         // why, when failed
  std::string kernel_release;  // read back from the running kernel
  std::vector<nlohmann::json> agent_records;  // the agent's JSON lines ("round" records)
  nlohmann::json storage;      // storage::Filesystem::describe()
  nlohmann::json environment;  // noise controls read back
  nlohmann::json health;       // kernel log findings
  nlohmann::json direct_hit;   // ftrace counts
  nlohmann::json profile;      // function profiles, one entry per workload (trace/profile.hpp)
  std::string log;             // relative to bundle_dir
  std::string console_tail;
  // A point that spans a kernel switch (bare metal) is timed by the backend, across the
  // reboots: when it started and how long it took. Unset: the pipeline times the call.
  std::string started_at;
  std::optional<double> seconds;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Checks what the backend itself needs once the kernels are built (CONTROL_KERNEL: the
  // control arm's image, when its rules in experiment/backends.hpp say it boots kernels)
  // and before the run's directory is written; throws UserError with the fix. The qemu
  // backend decides its accelerator here.
  virtual void preflight(const std::optional<fs::path>& /*control_kernel*/) {}
  // Its own section of E (experiment/backends.hpp: has_section), read and checked before
  // anything else, also for --dry-run and `validate`; throws UserError naming the field.
  virtual void check_experiment(const experiment::Experiment& /*e*/) {}
  // Before anything is touched or built: what this backend needs of this machine for E
  // (programs, root, the storage guard); throws UserError with the fix.
  virtual void check_machine(const experiment::Experiment& /*e*/) const {}
  virtual nlohmann::json machine() = 0;  // recorded once per bundle
  // Whether E's points are sure, before anything runs, to be timed on a clock other work on
  // the machine does not disturb (QEMU's instruction clock): such runs share the machine
  // with each other (pipeline/host_changes.hpp), never with a run timed on the wall clock.
  virtual bool undisturbed_clock() const { return false; }
  // Never throws for a point that failed (that is data); throws Interrupted on Ctrl-C and
  // UserError for bad input found only now.
  virtual PointResult run_point(const PointContext& context) = 0;
  // What run_point would do, as commands a reader can check, touching nothing (--dry-run).
  virtual std::string describe_point(const PointContext& context) const = 0;
};

struct BackendOptions {
  fs::path agent;        // ksandwich-agent binary
  fs::path data_dir;     // the source tree or <prefix>/share/ksandwich, for install hints
  fs::path fio_jobs_dir; // workloads/fio
  std::string accel = "auto";  // qemu: auto | kvm | tcg (experiment qemu.accel)
  fs::path cache_dir;          // qemu: where the KVM probe's answer is remembered; empty: nowhere
  std::string clock = "auto";  // auto | time | instructions (experiment clock)
  uint32_t vcpus = 1;          // qemu: the guest's vCPUs (the instruction clock runs one)
};

std::unique_ptr<Backend> make_backend(const std::string& name, const BackendOptions& options);

// The agent's argv for one workload: the same for the host and inside a guest. Pure.
// CANARY false: no CPU canary around the rounds (a deterministic clock needs none).
std::vector<std::string> agent_argv(const std::string& agent, const experiment::Workload& w,
                                    const experiment::Experiment& e, const std::string& dir,
                                    const std::string& fio_jobs_dir, bool canary = true);

// The functions the experiment asks to count on ARM's kernel.
std::vector<trace::Target> direct_hit_targets(const experiment::Experiment& e, const std::string& arm);

// The direct-hit pass runs after the timed rounds, never during them, and is short: the
// same workloads for one round of at most 1,000 operations or one second.
experiment::Experiment direct_hit_pass(experiment::Experiment e);

}  // namespace ks::boot

#pragma once
// The kernels of a run: for the qemu backend every arm is built (or found in the build
// cache) before the first point boots, and the matched-build audit goes into the bundle.
// The host backend runs the kernel booted now and builds nothing.
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "kernel/kbuild.hpp"
#include "evidence/bundle.hpp"
#include "experiment/experiment.hpp"

namespace ks::pipeline {

namespace fs = std::filesystem;

struct RunKernels {
  std::map<std::string, kernel::BuiltKernel> by_arm;
  nlohmann::json builds = nlohmann::json::object();  // bundle.builds: {control, patched, audit[], matched}
  // per arm: {seconds (its own build, or the cache lookup), cache_hit, mode, build_seconds}
  nlohmann::json timings = nlohmann::json::object();
};

// The files the builds need exist: the kernel source (and each arm's commit), every config
// fragment and every arm's patches, and each patch file holds a diff (a mailbox or a plain
// diff, not /etc/hostname). Cheap; run before anything is written, and by --dry-run, so a
// typo costs nothing. Throws UserError.
void check_kernel_inputs(const experiment::Experiment& e, const fs::path& repo_dir,
                         const fs::path& experiment_dir);

// Two lines an arm, control first: what its kernel is made of (the source, a later commit,
// the patches), and its build in the cache or, to be built, whether its patches apply
// (kernel::look_up) and how long the nearest earlier build of its kind took here, as the dry
// run shows it. Writes nothing. Run after check_kernel_inputs; throws UserError when a patch
// does not apply.
struct KernelPlan {
  std::string text;
  double build_seconds = 0;        // the arms to build whose kind has an earlier build here
  std::vector<std::string> untold;  // the arms to build without one
};
KernelPlan describe_kernels(const experiment::Experiment& e, const fs::path& repo_dir,
                            const fs::path& experiment_dir);

// Builds every arm (the others reuse the control's objects). Throws UserError for bad
// input (a patch that does not apply, a config symbol that cannot be had) before anything
// is compiled. Each build's log is build_dir/build.log.
RunKernels build_kernels(const experiment::Experiment& e, const fs::path& repo_dir,
                         const fs::path& experiment_dir);

// A bundle's BUILDS with their audit and matched derived again from the two builds, never
// taken from the bundle's word (thirty-eighth, sixty-first to sixty-third attacks): without
// two builds (the host backend) none; builds that cannot be audited get audit [] and matched
// false, and *UNAUDITED (when given) says why.
nlohmann::json reaudited(const nlohmann::json& builds, bool later_commit, std::string* unaudited = nullptr);

// The gate for bundle.builds: every audited field PASS (only the patch identity and the
// release may differ). No gate when the bundle has no builds (host backend).
std::optional<evidence::Gate> matched_build_gate(const nlohmann::json& builds);

}  // namespace ks::pipeline

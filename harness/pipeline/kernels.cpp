#include "pipeline/kernels.hpp"

#include <algorithm>

#include "analysis/gate_kind.hpp"
#include "kernel/audit.hpp"
#include "kernel/patches.hpp"
#include "source/source.hpp"
#include "kernel/progress.hpp"
#include "util/files.hpp"
#include "util/ownership.hpp"
#include "util/progress.hpp"

namespace ks::pipeline {
namespace {

using nlohmann::json;

// Control first: the other arms start from a copy of its finished build tree.
std::vector<std::string> build_order(const experiment::Experiment& e) {
  std::vector<std::string> arms{"control"};
  for (auto& [name, arm] : e.arms)
    if (name != "control") arms.push_back(name);
  return arms;
}

// An arm's time in this run: its own build when this run built it (the control is built
// inside the first patched arm's call, so "built now" is read from the build's start),
// else the cache lookup.
void record(RunKernels& k, const std::string& arm, kernel::BuiltKernel built,
            const std::string& run_started_at) {
  const auto& b = built.identity["build"];
  bool built_now = b.value("started_at", std::string()) >= run_started_at;
  k.timings[arm] = {{"seconds", built_now ? b.value("seconds", 0.0) : built.seconds},
                    {"cache_hit", !built_now},
                    {"mode", b.value("mode", "")},
                    {"build_seconds", b.value("seconds", 0.0)}};
  k.by_arm.emplace(arm, std::move(built));
}

void add_audit(RunKernels& k, bool later_commit) {
  if (k.by_arm.count("control") && k.by_arm.count("patched"))
    k.builds = kernel::builds_json(k.by_arm.at("control").identity, k.by_arm.at("patched").identity, later_commit);
}

}  // namespace

void check_kernel_inputs(const experiment::Experiment& e, const fs::path& repo_dir,
                         const fs::path& experiment_dir) {
  for (auto& [arm, spec] : e.arms) {
    auto request = kernel::request_for_arm(e, arm, repo_dir, experiment_dir);
    (void)source::check_source(request.source, request.commit);
    for (auto& fragment : request.config.fragments) kernel::resolve_fragment(fragment, repo_dir);
    for (auto& patch : request.patches) {
      auto path = kernel::resolve_patch(patch, repo_dir);
      require_trusted_input(path, "patch file");
      (void)kernel::parse_patch_file(read_input_file(path, kMaxInputBytes, "patch file"), path.string());
    }
  }
}

KernelPlan describe_kernels(const experiment::Experiment& e, const fs::path& repo_dir,
                            const fs::path& experiment_dir) {
  KernelPlan plan;
  for (auto& arm : build_order(e)) {
    auto r = kernel::request_for_arm(e, arm, repo_dir, experiment_dir);
    plan.text += "  " + arm + ": " + source::kind_of(r.source) + " " + source::origin_path(r.source).string();
    if (!r.source.commit.empty()) plan.text += " at " + r.source.commit;
    if (!r.commit.empty()) plan.text += ", then its diff to " + r.commit;
    for (auto& p : r.patches) plan.text += ", + " + kernel::resolve_patch(p, repo_dir).string();
    auto found = kernel::look_up(r);
    if (!found.source_version.empty()) plan.text += " (" + found.source_version + ")";
    if (found.cached) {
      plan.text += "\n      in the cache: " + found.cached->build_dir.string() + "\n";
      continue;
    }
    plan.text += "\n      to build" + (found.patches.empty() ? "" : ": " + found.patches);
    if (found.estimate && found.estimate->seconds > 0) {
      plan.build_seconds += found.estimate->seconds;
      plan.text += "; about " + progress::format_duration(found.estimate->seconds) + ", as " +
                   found.estimate->from + " took\n";
    } else {
      plan.untold.push_back(arm);
      plan.text += "; no earlier build of its kind in the cache tells how long\n";
    }
  }
  return plan;
}

RunKernels build_kernels(const experiment::Experiment& e, const fs::path& repo_dir,
                         const fs::path& experiment_dir) {
  RunKernels k;
  kernel::Progress progress(stderr);
  const auto started_at = now_utc_iso8601();
  // The patched arms first: build_arm checks their patches apply before it builds the
  // control they start from, so a bad patch fails in seconds, not after a full build.
  auto arms = build_order(e);
  std::rotate(arms.begin(), arms.begin() + 1, arms.end());
  for (auto& arm : arms) {
    record(k, arm, kernel::build_arm(kernel::request_for_arm(e, arm, repo_dir, experiment_dir), progress),
           started_at);
  }
  add_audit(k, experiment::patched_at_later_commit(e));
  return k;
}

json reaudited(const json& builds, bool later_commit, std::string* unaudited) {
  if (!builds.is_object()) return builds;
  json out = builds;
  if (!builds.contains("control") || !builds.contains("patched")) {
    out.erase("audit");
    out.erase("matched");
    return out;
  }
  try {
    auto again = kernel::builds_json(builds["control"], builds["patched"], later_commit);
    out["audit"] = again["audit"];
    out["matched"] = again["matched"];
  } catch (const std::exception& err) {
    out["audit"] = json::array();
    out["matched"] = false;
    if (unaudited) *unaudited = "the builds cannot be audited: " + one_line(err.what());
  }
  return out;
}

std::optional<evidence::Gate> matched_build_gate(const json& builds) {
  if (!builds.is_object() || !builds.contains("audit") || !builds["audit"].is_array()) return std::nullopt;
  std::vector<std::string> failed;
  for (auto& row : builds["audit"])
    if (row.value("status", "") != "PASS") failed.push_back(row.value("field", "?"));
  if (failed.empty())
    return analysis::make_gate(analysis::GateKind::matched_builds, "builds", true,
                               "control and patched differ only by the patches and the release");
  return analysis::make_gate(analysis::GateKind::matched_builds, "builds", false,
                             "the kernels differ where they must not: " + join(failed, ", "));
}

}  // namespace ks::pipeline

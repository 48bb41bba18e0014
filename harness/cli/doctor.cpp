#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "boot/accel.hpp"
#include "boot/baremetal/baremetal.hpp"
#include "cli/commands.hpp"
#include "machine/doctor.hpp"
#include "experiment/experiment.hpp"
#include "pipeline/host_changes.hpp"
#include "pipeline/past_runs.hpp"
#include "proc/runner.hpp"
#include "source/source.hpp"
#include "trace/function_counter.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/ownership.hpp"

namespace ks::cli {
namespace {

// Which accelerator the main job would get here, decided by the same probe `run` uses.
machine::Check accelerator_check(const std::filesystem::path& cache, std::string& accel) {
  const std::string fix =
      "TCG works everywhere but is slow and noisy; for KVM enable virtualization (firmware, nested "
      "virtualization) and modprobe kvm_intel or kvm_amd";
  if (!proc::have_program("qemu-system-x86_64")) return {"QEMU accelerator", false, false, true, "no QEMU", fix};
  try {
    // A kernel from the build cache boots the way the main job's will; without one only
    // the firmware probe can be run, which a KVM that hangs Linux guests passes.
    std::optional<std::filesystem::path> kernel;
    std::error_code ec;
    auto builds = cache / "build";
    for (auto& entry : std::filesystem::directory_iterator(builds, ec))
      if (std::filesystem::is_regular_file(entry.path() / "bzImage", ec) &&
          !untrusted_on_the_way(entry.path() / "bzImage", PathRole::kTrustedFile))  // root boots it
        kernel = entry.path() / "bzImage";
    auto choice = boot::choose_accel("auto", cache, kernel);
    accel = choice.accel;
    return {"QEMU accelerator", true, false, true,
            choice.accel + ": " + choice.reason +
                (kernel ? "" : " (firmware probe only: `run` confirms with its own kernel)"),
            choice.accel == "kvm" ? "" : fix};
  } catch (const std::exception& e) {
    return {"QEMU accelerator", false, false, true, e.what(), fix};
  }
}

// How long the main job would take here, as its dry run says: from this machine's kernel builds
// in the cache and its finished runs of the main job under ./results.
machine::Check main_job_time_check(const std::filesystem::path& repo_dir) {
  machine::Check c{"main job time", true, false, false, "", ""};
  try {
    auto file = repo_dir / "configs/experiments/default.json";
    auto e = experiment::parse_file(file);
    auto kernels = pipeline::describe_kernels(e, repo_dir, file.parent_path());
    c.detail = pipeline::describe_time(e, experiment::plan_points(e).size(), kernels,
                                       std::filesystem::absolute("results"));
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& err) {  // a check that cannot tell says so; doctor goes on
    c.ok = false;
    c.advice = true;
    c.detail = std::string("cannot tell: ") + err.what();
    if (auto* user = dynamic_cast<const UserError*>(&err)) c.fix = user->hint();
  }
  return c;
}

}  // namespace

void set_doctor_command(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand("doctor", "what this machine can do (KVM, QEMU, brd/zram/loop, btrfs, "
                                           "io_uring, tracefs, fio, governor) and what is missing, with the fix; its load, free cache space "
                                           "and how long the main job would take here");
  set_exit_status(cmd, {{0, "ready: the main job or the host backend can run here"}, {2, "not ready: the MISSING lines say what to install"}});
  auto as_json = std::make_shared<bool>(false);
  add_text_or_json(cmd, *as_json, "the checks as a table or as JSON");
  cmd->callback([as_json, &context] {
    // Installed (<prefix>/share/ksandwich holds no tools/), the fixes name the apt-get line.
    auto checks = machine::doctor_checks(machine::is_source_tree(context.repo_dir));
    // The kernel cache is checked once: the accelerator probe and the time estimate read it,
    // and a refused one (another user can change it) is one MISSING line, not three.
    std::optional<std::filesystem::path> cache;
    std::string accel;
    try {
      cache = source::default_cache_root();
    } catch (const UserError& e) {
      checks.push_back({"kernel cache", false, true, true, e.what(), e.hint()});
    }
    if (cache) checks.push_back(accelerator_check(*cache, accel));
    checks.push_back(machine::load_check(try_read_file("/proc/loadavg").value_or(""),
                                         std::thread::hardware_concurrency()));
    if (cache) {
      checks.push_back(machine::cache_space_check(*cache, machine::free_bytes(*cache)));
      checks.push_back(main_job_time_check(context.repo_dir));
    }
    // Whether calls can really be counted: a locked-down kernel lists the function tracer
    // but refuses to trace (EPERM), so the probe reads what counting needs.
    auto tracing = trace::probe_tracing();
    bool can_count = tracing.method != trace::kNoTracing;
    checks.push_back({"ftrace call counting", can_count, false, false,
                      can_count ? tracing.method + " in " + tracing.tracefs : tracing.reason,
                      "direct hits on the host need a kernel that allows tracing (no lockdown); "
                      "the qemu backend's kernels count in the guest"});
    for (auto& c : boot::baremetal::doctor_checks()) checks.push_back(c);
    bool host_ready = true, main_ready = true, bare_metal_ready = true;
    for (auto& c : checks) {
      host_ready = host_ready && (c.ok || !c.required);
      main_ready = main_ready && (c.ok || !c.main_job);
      bare_metal_ready = bare_metal_ready && (c.ok || !c.bare_metal);
    }
    auto left = pipeline::leftovers();
    if (*as_json) {
      nlohmann::json leftovers = nlohmann::json::array();
      for (auto& l : left)
        leftovers.push_back({{"dir", l.dir.string()}, {"pid", l.pid}, {"pending", l.pending},
                             {"fix", "ksandwich cleanup " + shell_quote(l.dir.string())}});
      nlohmann::json out{{"leftovers", leftovers},{"ready_for_main_job", main_ready},
                         {"main_job_accelerator", main_ready ? nlohmann::json(accel) : nlohmann::json()},
                         {"ready_for_host_sandwich", host_ready},
                         {"ready_for_bare_metal", bare_metal_ready},
                         {"checks", nlohmann::json::array()}};
      for (auto& c : checks)
        out["checks"].push_back({{"name", c.name}, {"ok", c.ok}, {"required", c.required},
                                 {"main_job", c.main_job}, {"bare_metal", c.bare_metal}, {"advice", c.advice}, {"detail", c.detail}, {"fix", c.ok ? "" : c.fix}});
      fmt::print("{}\n", out.dump(2));
    } else {
      for (auto& c : checks) {
        bool needed = c.required || c.main_job || c.bare_metal;
        fmt::print("{:<6} {:<30} {}\n", c.ok ? "ok" : needed ? "MISSING" : c.advice ? "warn" : "absent", c.name, c.detail);
        if (!c.ok) fmt::print("{:<6} {:<30} fix: {}\n", "", "", c.fix);
      }
      fmt::print("\n{}\n{}\n",
                 main_ready ? "ready for the main job (the QEMU sandwich, under " + accel + ")"
                            : "not ready for the main job: fix the MISSING lines above",
                 host_ready ? "ready for the host sandwich" : "not ready for the host sandwich: fix the MISSING lines above");
      fmt::print("{}\n", bare_metal_ready ? "ready for bare metal (the baremetal backend)"
                                          : "not ready for bare metal: fix the MISSING \"(bare metal)\" lines above");
      for (auto& l : left) {
        fmt::print("\nleftovers of a killed run (pid {}) in {}: {} change(s) not undone\n", l.pid, l.dir.string(),
                   l.pending.size());
        for (auto& p : l.pending) fmt::print("  {}\n", p);
        fmt::print("  fix: ksandwich cleanup {}\n", shell_quote(l.dir.string()));
      }
    }
    context.exit_code = main_ready || host_ready ? 0 : 2;
  });
}

}  // namespace ks::cli

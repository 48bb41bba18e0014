#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "machine/doctor.hpp"
#include "trace/function_counter.hpp"

namespace ks::cli {

void set_doctor_command(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand("doctor", "what this machine can do (KVM, QEMU, brd/zram/loop, btrfs, "
                                           "io_uring, tracefs, fio, governor) and what is missing, with the fix");
  auto as_json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *as_json, "print the checks as JSON");
  cmd->callback([as_json, &context] {
    auto checks = machine::doctor_checks();
    // Whether calls can really be counted: a locked-down kernel lists the function tracer
    // but refuses to trace (EPERM), so the probe reads what counting needs.
    auto tracing = trace::probe_tracing();
    bool can_count = tracing.method != trace::kNoTracing;
    checks.push_back({"ftrace call counting", can_count, false,
                      can_count ? tracing.method + " in " + tracing.tracefs : tracing.reason,
                      "direct hits on the host need a kernel that allows tracing (no lockdown); "
                      "the qemu backend's kernels count in the guest"});
    bool ready = true;
    for (auto& c : checks) ready = ready && (c.ok || !c.required);
    if (*as_json) {
      nlohmann::json out{{"ready_for_host_sandwich", ready}, {"checks", nlohmann::json::array()}};
      for (auto& c : checks)
        out["checks"].push_back({{"name", c.name}, {"ok", c.ok}, {"required", c.required},
                                 {"detail", c.detail}, {"fix", c.ok ? "" : c.fix}});
      fmt::print("{}\n", out.dump(2));
    } else {
      for (auto& c : checks) {
        fmt::print("{:<6} {:<28} {}\n", c.ok ? "ok" : (c.required ? "MISSING" : "absent"), c.name, c.detail);
        if (!c.ok) fmt::print("{:<6} {:<28} fix: {}\n", "", "", c.fix);
      }
      fmt::print("\n{}\n", ready ? "ready for the host sandwich"
                                 : "not ready: fix the MISSING lines above");
    }
    context.exit_code = ready ? 0 : 2;
  });
}

}  // namespace ks::cli

#pragma once
// What the tests that run `ksandwich run` for real share.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "proc/runner.hpp"
#include "support/paths.hpp"
#include "support/skip.hpp"

namespace ks::test {

// The host backend formats and mounts a RAM-backed device with the built agent.
inline void require_host_sandwich() {
  require_root("the host sandwich formats and mounts a RAM-backed device");
  KS_SKIP_UNLESS(proc::have_program("mkfs.btrfs"), "mkfs.btrfs is not installed (tools/setup.sh)");
  KS_SKIP_UNLESS(std::filesystem::exists(agent_binary()), "ksandwich-agent was not built");
}

// A run in which nothing failed: every point ok and every gate passed. Its exit code
// follows the workload verdicts (design.md): 1 on a material REGRESSION (noise can look
// like one), else 4 when a workload is INCONCLUSIVE (a screen without a calibrated spread
// always is: one degree of freedom is no noise estimate), else 0. Never 3: drift is no gate.
inline void check_exit_without_failures(int exit_code, const nlohmann::json& bundle) {
  for (auto& p : bundle["points"]) CHECK(p["status"] == "ok");
  for (auto& g : bundle["analysis"]["gates"]) {
    INFO("gate: " << g.dump());
    CHECK(g["passed"].get<bool>());
  }
  bool regression = false, inconclusive = false;
  for (auto& w : bundle["analysis"]["workloads"]) {
    regression = regression || (w["verdict"] == "REGRESSION" && w.value("material", false));
    inconclusive = inconclusive || w["verdict"] == "INCONCLUSIVE";
  }
  CHECK(exit_code == (regression ? 1 : inconclusive ? 4 : 0));
}

}  // namespace ks::test

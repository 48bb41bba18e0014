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

// A short screen on a noisy machine may end INVALID through the drift gate (exit 3): with a
// delta near zero, any drift exceeds half of it. Every other gate must pass and no point
// may fail; then exit 3 is explained by drift alone, else the exit is 0 or 1 (1 when
// noise looked like a material regression).
inline void check_exit_explained_by_drift(int exit_code, const nlohmann::json& bundle) {
  for (auto& p : bundle["points"]) CHECK(p["status"] == "ok");
  bool drift_failed = false;
  for (auto& g : bundle["analysis"]["gates"]) {
    if (g["passed"].get<bool>()) continue;
    INFO("failed gate: " << g.dump());
    CHECK(g["name"] == "drift");
    drift_failed = true;
  }
  if (drift_failed) CHECK(exit_code == 3);
  else CHECK((exit_code == 0 || exit_code == 1));
}

}  // namespace ks::test

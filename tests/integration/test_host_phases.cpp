// The host backend tells its phases as a point goes (for the progress line): a real point on
// btrfs over a RAM-backed device, as root, a few seconds.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "boot/host.hpp"
#include "experiment/experiment.hpp"
#include "support/paths.hpp"
#include "support/sandwich.hpp"
#include "support/temp_dir.hpp"
#include "util/files.hpp"

using nlohmann::json;

TEST_CASE("host backend: a point reports mkfs, each workload and its rounds as they happen") {
  ks::test::require_host_sandwich();
  ks::test::TempDir tmp("ks-host-phases");
  auto e = ks::experiment::parse(json{{"name", "it-host-phases"},
                                      {"backend", "host"},
                                      {"rounds", 3},
                                      {"warmup_rounds", 1},
                                      {"storage", {{"kind", "auto"}, {"size_mib", 512}}},
                                      {"arms", {{"control", json::object()}, {"patched", json::object()}}},
                                      {"workloads", {{{"name", "clone"}, {"ops", 200}}, {{"name", "dedupe"}, {"ops", 200}}}}});
  ks::boot::HostBackend backend({.agent = ks::test::agent_binary(),
                                 .data_dir = ks::test::source_dir(),
                                 .fio_jobs_dir = ks::test::source_dir() / "workloads/fio"});
  ks::boot::PointContext ctx{e, e.arms.at("control"), 0, 0, tmp.path, tmp.path / "points/00-control", {}, ""};
  std::vector<std::pair<std::string, bool>> heard;
  ctx.phase = [&](const std::string& phase, bool milestone) { heard.emplace_back(phase, milestone); };
  auto result = backend.run_point(ctx);
  INFO(result.failure);
  REQUIRE(result.status == "ok");

  std::vector<std::string> milestones, all;
  for (auto& [phase, milestone] : heard) {
    all.push_back(phase);
    if (milestone) milestones.push_back(phase);
  }
  INFO(ks::join(all, "\n"));
  CHECK(milestones == std::vector<std::string>{"mkfs", "workload 1 of 2: clone", "workload 2 of 2: dedupe"});
  // The rounds as the agent printed them, in order: one warm-up and three measured each.
  CHECK(all == std::vector<std::string>{"mkfs",
                                        "workload 1 of 2: clone",
                                        "workload 1 of 2: clone, warm-up 1 of 1",
                                        "workload 1 of 2: clone, round 1 of 3",
                                        "workload 1 of 2: clone, round 2 of 3",
                                        "workload 1 of 2: clone, round 3 of 3",
                                        "workload 2 of 2: dedupe",
                                        "workload 2 of 2: dedupe, warm-up 1 of 1",
                                        "workload 2 of 2: dedupe, round 1 of 3",
                                        "workload 2 of 2: dedupe, round 2 of 3",
                                        "workload 2 of 2: dedupe, round 3 of 3"});
}

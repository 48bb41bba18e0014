// `ksandwich bisect` for real: a small git history of the default kernel source (eight
// commits, each a comment in fs/btrfs, the fifth also planting udelay(20) in
// btrfs_remap_file_range, kept from then on; tests/support/kernel_git_fixture.sh), a tiny
// qemu confirm experiment on clone, and the bisection must name the fifth commit. Every
// kernel after the good one is an incremental build from the good kernel's tree. Then the
// same command continues a bisection cut short, rerunning nothing that finished.
//
// The fixture and the kernels live in the integration cache (<cache>/integration), so a
// rerun reuses them; cold, the good kernel is one full build (ccache shared with the other
// kernel tests).
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "proc/runner.hpp"
#include "source/source.hpp"
#include "support/paths.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "util/files.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

fs::path integration_cache() { return ks::source::default_cache_root() / "integration"; }

void require_qemu_kernels() {
  KS_SKIP_UNLESS(fs::exists("/usr/src/linux-source-6.1.tar.xz"),
                 "needs /usr/src/linux-source-6.1.tar.xz (apt-get install linux-source-6.1)");
  for (const char* tool : {"git", "qemu-system-x86_64", "mkfs.btrfs", "make", "gcc", "flex", "bison", "bc", "cpio"})
    KS_SKIP_UNLESS(ks::proc::have_program(tool), std::string("needs ") + tool + " (tools/setup.sh)");
  KS_SKIP_UNLESS(fs::exists("/bin/busybox"), "/bin/busybox is missing (apt-get install busybox-static)");
  KS_SKIP_UNLESS(fs::exists(ks::test::agent_binary()), "ksandwich-agent is not built");
}

// The fixture's commit ids, oldest first (made on first use).
std::vector<std::string> fixture(const fs::path& dir, int commits, int slow_from) {
  auto script = ks::test::source_dir() / "tests/support/kernel_git_fixture.sh";
  auto r = ks::proc::run(ks::proc::command(
      {"bash", script.string(), dir.string(), std::to_string(commits), std::to_string(slow_from)},
      std::chrono::minutes(30)));
  INFO(r.out << r.err);
  REQUIRE(r.ok());
  auto ids = ks::split(ks::trim(r.out), '\n');
  REQUIRE(ids.size() == static_cast<size_t>(commits));
  return ids;
}

json experiment(const fs::path& repo) {
  return {{"name", "it-bisect"},
          {"backend", "qemu"},
          {"scheme", "confirm"},
          {"min_blocks", 3},
          {"max_blocks", 3},
          {"rounds", 3},
          {"cpu", 1},
          {"point_timeout_s", 300},
          {"qemu", {{"memory_mib", 1024}, {"vcpus", 1}}},
          {"storage", {{"kind", "brd"}, {"size_mib", 256}}},
          {"source", {{"kind", "git"}, {"path", repo.string()}, {"commit", "HEAD"}}},
          {"arms", {{"control", json::object()}, {"patched", json::object()}}},
          {"workloads", {{{"name", "clone"}, {"ops", 200}}}},
          {"direct_hits", {{{"function", "btrfs_remap_file_range"}, {"required", true}}}}};
}

ks::proc::Result ksandwich(std::vector<std::string> args) {
  args.insert(args.begin(), ks::test::ksandwich_binary().string());
  ks::proc::Command cmd;
  cmd.argv = args;
  cmd.timeout = std::chrono::minutes(90);  // cold: one full kernel build, then the steps
  cmd.env = {{"KSANDWICH_CACHE", integration_cache().string()}};
  return ks::proc::run(cmd);
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

TEST_CASE("bisect: eight commits, a slowdown planted in the fifth, bisect names the fifth") {
  require_qemu_kernels();
  ks::test::require_root("brd, QEMU's storage and the run lock");
  auto ids = fixture(integration_cache() / "fixtures/bisect-remap-8-5", 8, 5);
  ks::test::TempDir tmp("ks-bisect");
  auto exp = tmp.path / "experiment.json";
  ks::write_file(exp, experiment(integration_cache() / "fixtures/bisect-remap-8-5").dump(2));
  auto out = tmp.path / "out";
  std::vector<std::string> args = {"bisect", exp.string(), "--good", ids[0], "--bad", ids[7],
                                   "--out", out.string(), "--reported-by", "Tester <tester@example.org>"};

  auto started = Clock::now();
  auto r = ksandwich(args);
  double total = seconds_since(started);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);  // the first bad commit named: a material regression
  const std::string fifth = ids[4].substr(0, 12);
  CHECK(r.out.find("first bad commit: " + fifth) != std::string::npos);

  auto state = json::parse(ks::read_file(out / "bisect.json"));
  CHECK(state["status"] == "found");
  CHECK(state["first_bad"] == ids[4]);
  auto steps = state["steps"];
  REQUIRE(steps.size() >= 2);
  CHECK(steps[0]["role"] == "initial");
  std::cout << "bisect: " << steps.size() - 1 << " steps after the initial comparison, " << total << " s in all\n";
  for (auto& s : steps) {
    // Every step measured has its bundle; every kernel after the good one was incremental.
    CHECK(fs::exists(fs::path(s["dir"].get<std::string>()) / "bundle.json"));
    auto bundle = json::parse(ks::read_file(fs::path(s["dir"].get<std::string>()) / "bundle.json"));
    CHECK(bundle["builds"]["patched"]["build"]["mode"] == "incremental");
    CHECK(bundle["builds"]["matched"] == true);
    std::cout << "  " << s["commit"].get<std::string>().substr(0, 12) << " " << s["verdict"].get<std::string>()
              << " ratio " << s["effects"][0]["ratio"].get<double>() << " build " << s["build_seconds"].get<double>()
              << " s, step " << s["seconds"].get<double>() << " s (kernel build "
              << bundle["builds"]["patched"]["build"]["seconds"].get<double>() << " s, "
              << bundle["builds"]["patched"]["build"]["compiled"].get<int>() << " files compiled)\n";
  }
  auto reply = ks::read_file(out / "reply.txt");
  CHECK(reply.find("Fixes: " + fifth + " (\"btrfs: wait 20us in btrfs_remap_file_range (planted slowdown)\")") !=
        std::string::npos);
  CHECK(reply.find("Reported-by: Tester <tester@example.org>") != std::string::npos);

  // Cut short after its last step had run but before its verdict was written: the same
  // command continues, resumes that step's run (nothing left to measure) and ends the same.
  state["status"] = "running";
  state["first_bad"] = "";
  state["steps"].back()["verdict"] = "";
  ks::write_file(out / "bisect.json", state.dump(2));
  started = Clock::now();
  auto again = ksandwich(args);
  INFO(again.out << again.err);
  CHECK(again.exit_code == 1);
  CHECK(again.out.find("first bad commit: " + fifth) != std::string::npos);
  auto resumed = json::parse(ks::read_file(out / "bisect.json"));
  CHECK(resumed["steps"].size() == steps.size());
  std::cout << "bisect: continued in " << seconds_since(started) << " s\n";

  // Another bisection into the same directory is refused.
  auto other = ksandwich({"bisect", exp.string(), "--good", ids[1], "--bad", ids[7], "--out", out.string()});
  CHECK(other.exit_code == 2);
  CHECK(other.err.find("holds another bisection") != std::string::npos);
}

#pragma once
// What the git-history integration tests share (nightly, bisect): the kernel git fixture,
// the integration kernel cache, and `ksandwich` run against that cache.
//
// The fixture (tests/support/kernel_git_fixture.sh) is eight commits of the default kernel
// source, each a comment in fs/btrfs, the fifth also planting udelay(1000) in
// btrfs_remap_file_range, kept from then on. Bisect runs over all eight; the nightly's four
// nights are commits 3 to 6 (one a night, so the slowdown arrives on the third night).
// Commit ids are fixed, so its kernels (the first commit as the baseline, each later one an
// incremental build from it) stay in the cache between runs and the two tests share them.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "proc/runner.hpp"
#include "source/source.hpp"
#include "support/integration_cache.hpp"
#include "support/paths.hpp"
#include "support/skip.hpp"
#include "util/files.hpp"

namespace ks::test {

inline constexpr int kHistoryCommits = 8;
inline constexpr int kSlowFrom = 5;  // 1-based: the fifth commit is the first slow one
// A clone under TCG takes 40-90 us of wall time, so the delay makes it about 15x slower on
// the wall clock the bare-metal test's lab machine times (a shift no slow stretch of the
// host hides); on the instruction clock of the other tests it is larger still.
inline constexpr int kSlowDelayUs = 1000;
inline constexpr const char* kSlowSubject = "btrfs: wait 1000us in btrfs_remap_file_range (planted slowdown)";

inline std::filesystem::path history_fixture_dir() { return integration_cache() / "fixtures/remap-8-5-1000us"; }

inline void require_qemu_kernels() {
  KS_SKIP_UNLESS(std::filesystem::exists("/usr/src/linux-source-6.1.tar.xz"),
                 "needs /usr/src/linux-source-6.1.tar.xz (apt-get install linux-source-6.1)");
  for (const char* tool : {"git", "qemu-system-x86_64", "mkfs.btrfs", "make", "gcc", "flex", "bison", "bc", "cpio"})
    KS_SKIP_UNLESS(proc::have_program(tool), std::string("needs ") + tool + " (tools/setup.sh)");
  KS_SKIP_UNLESS(std::filesystem::exists("/bin/busybox"), "/bin/busybox is missing (apt-get install busybox-static)");
  KS_SKIP_UNLESS(std::filesystem::exists(agent_binary()), "ksandwich-agent is not built");
}

// `ksandwich ARGS...` with the integration cache (cold: one full kernel build first).
inline proc::Result ksandwich_in_cache(std::vector<std::string> args) {
  args.insert(args.begin(), ksandwich_binary().string());
  proc::Command cmd;
  cmd.argv = args;
  cmd.timeout = std::chrono::minutes(60);
  cmd.env = integration_cache_env();
  return proc::run(cmd);
}

// The fixture's commit ids, oldest first (made on first use, about a minute).
//
// First, Debian's own source is built (the default control kernel: a cache hit after the
// first time). Only that build writes ccache (harness/kernel/kbuild.cpp), and the fixture's
// first commit is the same tree: its baseline then compiles from ccache in minutes, where a
// cold machine compiled the whole kernel twice, once for the fixture and once for Debian.
inline std::vector<std::string> history_fixture() {
  {
    auto built = ksandwich_in_cache({"build"});
    INFO(built.out << built.err);
    REQUIRE(built.exit_code == 0);
  }
  auto script = source_dir() / "tests/support/kernel_git_fixture.sh";
  auto r = proc::run(proc::command({"bash", script.string(), history_fixture_dir().string(),
                                    std::to_string(kHistoryCommits), std::to_string(kSlowFrom), std::to_string(kSlowDelayUs)},
                                   std::chrono::minutes(30)));
  INFO(r.out << r.err);
  REQUIRE(r.ok());
  auto ids = split(trim(r.out), '\n');
  REQUIRE(ids.size() == static_cast<size_t>(kHistoryCommits));
  return ids;
}

// The small qemu confirm the history tests run on the fixture's git tree at PATH: clone only,
// 3 or 4 blocks, on QEMU's instruction clock on every machine (TCG, even where KVM works), so
// a flat commit repeats to about 0.002% and is NO_CHANGE at the first look, and the planted
// 1000 us (a busy wait of about a million guest instructions per clone) is a ratio of ten or
// more. Two rounds of 100 clones: a point is mostly its boot, about 10 s. No CPU is pinned:
// the tests on this clock run side by side (tests/CMakeLists.txt), a QEMU on each core.
inline nlohmann::json clone_confirm(const std::string& name, const std::string& path, const std::string& commit) {
  return {{"name", name},
          {"backend", "qemu"},
          {"clock", "instructions"},
          {"scheme", "confirm"},
          {"min_blocks", 3},
          {"max_blocks", 4},
          {"rounds", 2},
          {"point_timeout_s", 300},
          {"qemu", {{"memory_mib", 1024}, {"vcpus", 1}}},
          {"storage", {{"kind", "brd"}, {"size_mib", 256}}},
          {"source", {{"kind", "git"}, {"path", path}, {"commit", commit}}},
          {"arms", {{"control", nlohmann::json::object()}, {"patched", nlohmann::json::object()}}},
          {"workloads", {{{"name", "clone"}, {"ops", 100}}}}};
}


}  // namespace ks::test

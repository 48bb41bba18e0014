// A kernel build's progress: compile steps counted from make's V=0 output (lines recorded
// from a real build of 6.1.192), "done of ~total" with an ETA from the rate so far, and the
// total taken only from an earlier build that can tell it.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "kernel/kbuild.hpp"
#include "kernel/progress.hpp"
#include "support/memory_stream.hpp"
#include "support/temp_dir.hpp"
#include "util/files.hpp"

using ks::kernel::BuildEstimate;
using ks::kernel::BuildKind;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// From logs/build-control.log of a full build of the default experiment.
const char* kMakeOutput =
    "make: Entering directory '/var/cache/ksandwich/build/.work/linux'\n"
    "  HOSTCC  scripts/basic/fixdep\n"
    "  GEN     Makefile\n"
    "  CC      arch/x86/entry/vsyscall/vsyscall_64.o\n"
    "  CC      init/initramfs.o\n"
    "  AS      arch/x86/entry/vsyscall/vsyscall_emu_64.o\n"
    "  AR      arch/x86/entry/vsyscall/built-in.a\n"
    "  AS      arch/x86/entry/entry_64.o\n"
    "  CC      fs/btrfs/ctree.o\n"
    "  AR      fs/btrfs/built-in.a\n"
    "  LD      vmlinux.o\n"
    "  OBJCOPY modules.builtin.modinfo\n";

}  // namespace

TEST_CASE("kernel progress: CC and AS lines are compile steps, nothing else is") {
  ks::kernel::CompileCounter counter;
  CHECK(counter.feed(kMakeOutput));
  CHECK(counter.count() == 5);
  CHECK(counter.files().front() == "arch/x86/entry/vsyscall/vsyscall_64.o");
  CHECK(counter.files().back() == "fs/btrfs/ctree.o");
}

TEST_CASE("kernel progress: a line split across chunks is counted once, when it ends") {
  ks::kernel::CompileCounter counter;
  CHECK_FALSE(counter.feed("  CC      fs/btrfs/ct"));
  CHECK(counter.count() == 0);
  CHECK(counter.feed("ree.o\n  AR      fs/btrfs/built-in.a\n  CC      fs/btrfs/inode"));
  CHECK(counter.count() == 1);
  CHECK(counter.feed(".o\n"));
  CHECK(counter.files() == std::vector<std::string>{"fs/btrfs/ctree.o", "fs/btrfs/inode.o"});
}

TEST_CASE("kernel progress: done of the earlier build's total, with the time left at this rate") {
  BuildEstimate earlier{1261, "6.1.192-ks-control-82a2969d149079ba5c2d"};
  // 300 files in 400 s: 961 left at 0.75 files/s = 1281 s.
  CHECK(ks::kernel::build_detail(300, earlier, 400) == "300 of ~1261 files compiled, ETA 21m21s");
  CHECK(ks::kernel::build_detail(0, earlier, 5).empty());
  // Without an earlier build, or once past its total: the count alone, no wrong ETA.
  CHECK(ks::kernel::build_detail(300, std::nullopt, 400) == "300 files compiled");
  CHECK(ks::kernel::build_detail(1300, earlier, 2000) == "1300 files compiled");
}

TEST_CASE("kernel progress: the build line in a log, throttled, with the clock injected") {
  ks::test::MemoryStream log;
  double now = 100;
  {
    ks::progress::LineOptions o;
    o.out = log.file;
    o.live = false;
    o.now = [&now] { return now; };
    ks::kernel::Progress progress(o);
    progress.stage("control", "build");
    BuildEstimate earlier{1261, "earlier"};
    now = 103;
    progress.tick(ks::kernel::build_detail(10, earlier, progress.stage_seconds()));  // 3 s after the stage line
    now = 160;
    progress.tick(ks::kernel::build_detail(300, earlier, progress.stage_seconds()));
    progress.note("[control] built 6.1.192-ks-control in 1m00s");
  }
  CHECK(log.text() ==
        "[control] build\n"
        "[control] build 1m00s  300 of ~1261 files compiled, ETA 3m12s\n"
        "[control] built 6.1.192-ks-control in 1m00s\n");
}

namespace {

// A finished build in BUILDS as build_arm leaves it: just its identity.json.
void finished_build(const fs::path& builds, const std::string& name, const std::string& mode, size_t compiled,
                    const std::string& config_sha256, const std::vector<std::string>& patches = {},
                    const std::string& version = "6.1.192") {
  json patch_list = json::array();
  for (auto& p : patches) patch_list.push_back({{"file", p + ".patch"}, {"sha256", p}});
  json id{{"arm", mode == "full" ? "control" : "patched"},
          {"source", {{"version", version}}},
          {"config", {{"base", "tinyconfig"}, {"fragments", {{{"name", "btrfs-bench.config"}, {"sha256", "frag"}}}},
                      {"sha256", config_sha256}}},
          {"patches", patch_list},
          {"build", {{"mode", mode}, {"compiled", compiled}, {"make_seconds", 1800.0}}}};
  fs::create_directories(builds / name);
  ks::write_file(builds / name / "identity.json", id.dump(2));
}

BuildKind kind(bool incremental, const std::string& config, std::vector<std::string> patches = {}) {
  return BuildKind{"6.1.192", incremental, config, "tinyconfig", {"frag"}, std::move(patches)};
}

}  // namespace

TEST_CASE("kernel progress: a full build's total comes from the full build of the same or the nearest config") {
  ks::test::TempDir tmp("ks-estimate");
  auto builds = tmp.path / "build";
  CHECK_FALSE(ks::kernel::estimate_build(builds, kind(false, "cfg-a")));  // no cache at all

  finished_build(builds, "other-version", "full", 2000, "cfg-a", {}, "6.6.1");
  finished_build(builds, "patched-a", "incremental", 12, "cfg-a", {"nosec"});
  CHECK_FALSE(ks::kernel::estimate_build(builds, kind(false, "cfg-a")));  // neither tells a full build's total

  finished_build(builds, "control-b", "full", 1300, "cfg-b");  // same base and fragments, another config
  auto nearest = ks::kernel::estimate_build(builds, kind(false, "cfg-a"));
  REQUIRE(nearest);
  CHECK(nearest->compiled == 1300);
  CHECK(nearest->from == "control-b (another config, same fragments)");

  finished_build(builds, "control-a", "full", 1261, "cfg-a");
  auto same = ks::kernel::estimate_build(builds, kind(false, "cfg-a"));
  REQUIRE(same);
  CHECK(same->compiled == 1261);
  CHECK(same->from == "control-a");

  fs::create_directories(builds / ".work");  // a build in progress: no identity, ignored
  ks::write_file(builds / "control-b" / "identity.json", "{\"build\": 7}");  // another shape: ignored
  CHECK(ks::kernel::estimate_build(builds, kind(false, "cfg-a"))->compiled == 1261);
}

TEST_CASE("kernel progress: an incremental build is estimated only from one of the same patches and config") {
  ks::test::TempDir tmp("ks-estimate");
  auto builds = tmp.path / "build";
  finished_build(builds, "control-a", "full", 1261, "cfg-a");
  // A full build's 1261 files would be a wrong total for a patched arm's dozen.
  CHECK_FALSE(ks::kernel::estimate_build(builds, kind(true, "cfg-a", {"nosec"})));
  finished_build(builds, "patched-other", "incremental", 40, "cfg-a", {"another-patch"});
  finished_build(builds, "patched-other-config", "incremental", 30, "cfg-b", {"nosec"});
  CHECK_FALSE(ks::kernel::estimate_build(builds, kind(true, "cfg-a", {"nosec"})));
  finished_build(builds, "patched-a", "incremental", 12, "cfg-a", {"nosec"});
  auto same = ks::kernel::estimate_build(builds, kind(true, "cfg-a", {"nosec"}));
  REQUIRE(same);
  CHECK(same->compiled == 12);
}

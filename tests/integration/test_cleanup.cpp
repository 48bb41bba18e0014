// A run killed with SIGKILL leaves its filesystem mounted, its device attached and its knob
// set; `ksandwich cleanup DIR` undoes exactly that from the run's journal. While the run
// lives, a second run meets the machine lock (exit 2, naming it) and cleanup refuses.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "pipeline/host_changes.hpp"
#include "proc/runner.hpp"
#include "support/killed_process.hpp"
#include "support/paths.hpp"
#include "support/sandwich.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "util/files.hpp"
#include "util/journal.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

const char* kKnob = "/proc/sys/vm/dirty_writeback_centisecs";

ks::proc::Result ksandwich(std::vector<std::string> args) {
  args.insert(args.begin(), ks::test::ksandwich_binary().string());
  return ks::proc::run(ks::proc::command(std::move(args), std::chrono::minutes(5)));
}

// doctor without its accelerator probe (a probe guest would cost a boot): no KVM device.
ks::proc::Result doctor() {
  auto cmd = ks::proc::command({ks::test::ksandwich_binary().string(), "doctor"}, std::chrono::minutes(2));
  cmd.env = {{"KSANDWICH_KVM_DEVICE", "/nonexistent/kvm"}};
  return ks::proc::run(cmd);
}

bool available(const std::string& kind) {
  if (kind == "zram") return fs::exists("/sys/class/zram-control/hot_add");
  return fs::exists("/dev/loop-control") && ks::proc::have_program("losetup");
}

bool mounted(const std::string& target) {
  for (auto& line : ks::split(ks::read_file("/proc/self/mounts"), '\n')) {
    auto w = ks::split(line, ' ');
    if (w.size() > 1 && w[1] == target) return true;
  }
  return false;
}

bool loop_attached(const std::string& file) {
  auto r = ks::proc::run(ks::proc::command({"losetup", "--associated", file}, 10s));
  return !ks::trim(r.out).empty();
}

// The killed run's workload keeps running in its own process group, holding the mount:
// stop the agents working under TARGET (by pid; nobody else's).
void stop_agents_under(const std::string& target) {
  for (int round = 0; round < 50; ++round) {
    bool found = false;
    for (auto& p : fs::directory_iterator("/proc")) {
      auto name = p.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      auto cmdline = ks::try_read_file(p.path() / "cmdline").value_or("");
      if (cmdline.find("ksandwich-agent") == std::string::npos || cmdline.find(target) == std::string::npos) continue;
      found = true;
      kill(std::stoi(name), SIGKILL);
    }
    if (!found) return;
    std::this_thread::sleep_for(100ms);
  }
}

void killed_run_is_cleaned_up(const std::string& kind) {
  ks::test::TempDir tmp("ks-cleanup");
  auto out = tmp.path / "out";
  auto original = ks::read_file(kKnob);
  auto value = std::to_string(std::stoi(original) + 1);
  json arm{{"sysfs", {{kKnob, value}}}};
  json e{{"name", "it-cleanup"},
         {"backend", "host"},
         {"rounds", 40},
         {"warmup_rounds", 1},
         {"cpu", 0},
         {"storage", {{"kind", kind}, {"size_mib", 512}}},
         {"arms", {{"control", arm}, {"patched", arm}}},
         {"workloads", {{{"name", "clone"}, {"ops", 20000}}}}};
  auto experiment = tmp.path / "experiment.json";
  ks::write_file(experiment, e.dump(2));

  pid_t pid = fork();
  if (pid == 0) {
    std::string bin = ks::test::ksandwich_binary().string();
    execl(bin.c_str(), bin.c_str(), "run", experiment.c_str(), "--out", out.c_str(), (char*)nullptr);
    _exit(127);
  }
  // Until the journal says the filesystem is mounted (with its identity) and the kernel agrees.
  std::string target, source, backing_file, zram_id;
  bool identified = false;
  for (int i = 0; i < 600 && !(identified && mounted(target)); ++i) {
    std::this_thread::sleep_for(100ms);
    auto journal = ks::journal::read(ks::pipeline::journal_file(out), ks::journal::load_key(ks::pipeline::kStateDir));
    for (auto& entry : journal.entries) {
      if (entry.kind == "mount") {
        target = entry.data.value("target", ""), source = entry.data.value("source", "");
        identified = entry.data.contains("mounted");
      }
      if (entry.kind == "loop") backing_file = entry.data.value("backing_file", "");
      if (entry.kind == "zram") zram_id = entry.data.value("id", "");
    }
  }
  REQUIRE(mounted(target));
  CHECK(ks::trim(ks::read_file(kKnob)) == value);

  // While it runs: a second run meets the lock, cleanup refuses.
  auto second = ksandwich({"run", experiment.string(), "--out", (tmp.path / "second").string()});
  CHECK(second.exit_code == 2);
  CHECK_THAT(second.err, Catch::Contains("pid " + std::to_string(pid)) && Catch::Contains(out.string()));
  CHECK_FALSE(fs::exists(tmp.path / "second"));
  auto refused = ksandwich({"cleanup", out.string()});
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Catch::Contains("still running"));

  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  stop_agents_under(target);

  // What SIGKILL leaves.
  CHECK(mounted(target));
  CHECK(ks::trim(ks::read_file(kKnob)) == value);
  if (kind == "zram") CHECK(fs::exists("/sys/block/zram" + zram_id));
  if (kind == "loop") CHECK(loop_attached(backing_file));
  CHECK_THAT(doctor().out, Catch::Contains("ksandwich cleanup " + ks::shell_quote(out.string())));

  auto cleanup = ksandwich({"cleanup", out.string()});
  INFO(cleanup.out << cleanup.err);
  CHECK(cleanup.exit_code == 0);
  CHECK_FALSE(mounted(target));
  CHECK_FALSE(fs::exists(target));
  CHECK(ks::read_file(kKnob) == original);  // byte for byte
  if (kind == "zram") CHECK_FALSE(fs::exists("/sys/block/zram" + zram_id));
  if (kind == "loop") {
    CHECK_FALSE(loop_attached(backing_file));
    CHECK_FALSE(fs::exists(backing_file));
  }
  CHECK(ks::journal::read(ks::pipeline::journal_file(out), ks::journal::load_key(ks::pipeline::kStateDir)).pending().empty());

  auto again = ksandwich({"cleanup", out.string()});
  CHECK(again.exit_code == 0);
  CHECK_THAT(again.out, Catch::Contains("0 undone, 0 skipped"));
  CHECK_THAT(doctor().out, !Catch::Contains(out.string()));
}

}  // namespace

TEST_CASE("a SIGKILLed host run leaves its mount, device and knob, `ksandwich cleanup` removes them") {
  ks::test::require_host_sandwich();
  KS_SKIP_UNLESS(fs::exists(kKnob), std::string(kKnob) + " does not exist on this kernel");
  int ran = 0;
  for (std::string kind : {"zram", "loop"}) {
    if (!available(kind)) {
      std::printf("storage kind %s is not available here: not tested\n", kind.c_str());
      continue;
    }
    INFO("storage kind " << kind);
    killed_run_is_cleaned_up(kind);
    ++ran;
  }
  KS_SKIP_UNLESS(ran > 0, "neither zram nor loop devices are available");
}

// Issue 27 (D5, D6): what a killed run made is undone only while its name still leads to that
// very object. Each thing here is made and journaled as a run makes it (sealed, with its
// identity), then swapped for a decoy of the same name, kind and source: cleanup leaves
// every decoy alone.
TEST_CASE("cleanup undoes only the objects its run made: a decoy of the same name is left alone") {
  KS_SKIP_UNLESS(::geteuid() == 0, "mounts and loop devices need root");
  KS_SKIP_UNLESS(available("loop"), "no loop devices here (losetup, /dev/loop-control)");
  ks::test::TempDir tmp("ks-cleanup-decoys");
  auto out = tmp.path / "out";
  fs::create_directories(out / "logs");
  fs::create_directories(ks::pipeline::kStateDir);
  const auto target = ks::pipeline::kStateDir / ("mnt-decoy-test-" + std::to_string(::getpid()));
  const auto file = fs::path("/dev/shm") / ("ksandwich-decoy-test-" + std::to_string(::getpid()));
  auto sh = [](std::vector<std::string> argv) { return ks::proc::run(ks::proc::command(std::move(argv), 30s)); };
  ks::test::in_killed_process([&] {  // the run: makes, journals, and dies without undoing anything
    ks::journal::Active active(ks::pipeline::journal_file(out), ks::journal::load_key(ks::pipeline::kStateDir));
    // Registered as HostChanges::open_journal registers a run: cleanup undoes only such runs.
    fs::create_directories(ks::pipeline::kStateDir / "active");
    ks::write_file(ks::pipeline::kStateDir / "active" / (std::to_string(::getpid()) + ".json"),
                   nlohmann::json{{"pid", ::getpid()},
                                  {"pid_start", ks::journal::process_start(::getpid()).value_or(0)},
                                  {"dir", out.string()}}.dump());
    fs::create_directories(target);
    auto mount = ks::journal::record("mount", {{"target", target.string()}, {"source", "tmpfs"}, {"fstype", "tmpfs"}});
    if (!sh({"mount", "-t", "tmpfs", "tmpfs", target.string()}).ok()) throw std::runtime_error("mount");
    ks::journal::amend(mount, {{"mounted", ks::journal::identity_of(target)}});
    auto made = ks::journal::record("file", {{"path", file.string()}});
    ks::write_file(file, std::string(1 << 20, 'x'));
    ks::journal::amend(made, ks::journal::identity_of(file));
    ks::journal::record("loop", {{"backing_file", file.string()}, {"backing", ks::journal::identity_of(file)}});
    if (!sh({"losetup", "--find", file.string()}).ok()) throw std::runtime_error("losetup");
  });
  REQUIRE(mounted(target.string()));
  REQUIRE(loop_attached(file.string()));

  // Someone else takes each name: a fresh tmpfs on the mount point, a new file, its loop device.
  // A few clock ticks later (birth times tick coarsely; freed numbers come back at once).
  std::this_thread::sleep_for(30ms);
  auto loops = ks::trim(sh({"losetup", "--noheadings", "--output", "NAME", "--associated", file.string()}).out);
  REQUIRE(sh({"losetup", "--detach", loops}).ok());
  REQUIRE(sh({"umount", target.string()}).ok());
  REQUIRE(sh({"mount", "-t", "tmpfs", "tmpfs", target.string()}).ok());
  ks::write_file(target / "theirs", "data");
  fs::remove(file);
  ks::write_file(file, std::string(1 << 20, 'y'));
  auto decoy_loop = ks::trim(sh({"losetup", "--find", "--show", file.string()}).out);

  auto cleanup = ksandwich({"cleanup", out.string()});
  INFO(cleanup.out << cleanup.err);
  CHECK(cleanup.exit_code == 0);
  CHECK_THAT(cleanup.out, Catch::Contains("something else has its name now"));
  CHECK(mounted(target.string()));
  CHECK(ks::read_file(target / "theirs") == "data");
  CHECK(fs::exists(file));
  CHECK(loop_attached(file.string()));

  sh({"losetup", "--detach", decoy_loop});
  sh({"umount", target.string()});
  std::error_code ec;
  fs::remove(target, ec);
  fs::remove(file, ec);
}

TEST_CASE("bulk cleanup: a registered run whose directory another user made holds up no other run's") {
  KS_SKIP_UNLESS(::geteuid() == 0, "runs are registered under /run/ksandwich, root's");
  ks::test::TempDir tmp("ks-cleanup-bulk");
  fs::permissions(tmp.path, fs::perms(0755));
  const auto theirs = tmp.path / "theirs", ours = tmp.path / "ours";
  const auto file = fs::path("/dev/shm") / ("ksandwich-bulk-test-" + std::to_string(::getpid()));
  for (const auto& out : {theirs, ours}) {
    fs::create_directories(out / "logs");
    ks::test::in_killed_process([&] {  // a run that made something and died
      ks::journal::Active active(ks::pipeline::journal_file(out), ks::journal::load_key(ks::pipeline::kStateDir));
      fs::create_directories(ks::pipeline::kStateDir / "active");
      ks::write_file(ks::pipeline::kStateDir / "active" / (std::to_string(::getpid()) + ".json"),
                     json{{"pid", ::getpid()},
                          {"pid_start", ks::journal::process_start(::getpid()).value_or(0)},
                          {"dir", out.string()}}.dump());
      if (out != ours) return;
      auto made = ks::journal::record("file", {{"path", file.string()}});
      ks::write_file(file, "x");
      ks::journal::amend(made, ks::journal::identity_of(file));
    });
  }
  // The first run's directory was removed, and another user made one by its name (seventy-first
  // attack: every later `cleanup` stopped at it, and the other run's changes stayed).
  fs::remove_all(theirs);
  fs::create_directory(theirs);
  REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
  REQUIRE(fs::exists(file));

  auto cleanup = ksandwich({"cleanup"});
  INFO(cleanup.out << cleanup.err);
  CHECK(cleanup.exit_code == 2);
  CHECK_THAT(cleanup.out, Catch::Contains(theirs.string() + ": not cleaned up") && Catch::Contains("belongs to uid 65534"));
  CHECK_THAT(cleanup.err, Catch::Contains("1 registered run(s) could not be cleaned up"));
  CHECK_FALSE(fs::exists(file));  // the other run's file, undone

  // Leave the machine as it was: the refused run's registration.
  for (auto& e : fs::directory_iterator(ks::pipeline::kStateDir / "active"))
    if (auto j = json::parse(ks::read_file(e.path()), nullptr, false); j.is_object() && j.value("dir", "") == theirs.string())
      fs::remove(e.path());
  std::error_code ec;
  fs::remove(file, ec);
}

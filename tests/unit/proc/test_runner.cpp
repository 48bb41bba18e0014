// The one process runner: what it starts does not outlive ksandwich.
#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "proc/runner.hpp"
#include "support/temp_dir.hpp"
#include "util/files.hpp"

namespace fs = std::filesystem;

TEST_CASE("a command's process dies with the ksandwich that started it, even by SIGKILL") {
  ks::test::TempDir dir("ks-runner");
  auto pid_file = dir.path / "child.pid";
  pid_t runner = fork();
  REQUIRE(runner >= 0);
  if (runner == 0) {  // plays ksandwich: runs a long command and waits for it
    ks::proc::run(ks::proc::command({"sh", "-c", "echo $$ > " + pid_file.string() + "; exec sleep 60"},
                                    std::chrono::seconds(120)));
    _exit(0);
  }
  pid_t child = 0;
  for (int i = 0; i < 100 && child == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto text = ks::try_read_file(pid_file);
    if (text && !ks::trim(*text).empty()) child = std::stoi(ks::trim(*text));
  }
  REQUIRE(child > 0);
  REQUIRE(kill(child, 0) == 0);  // the command runs
  kill(runner, SIGKILL);
  int status = 0;
  REQUIRE(waitpid(runner, &status, 0) == runner);
  // Dead: no such process, or a zombie nobody has reaped yet (state Z in /proc/PID/stat).
  auto dead = [&] {
    auto stat = ks::try_read_file("/proc/" + std::to_string(child) + "/stat");
    if (!stat) return true;
    auto close = stat->rfind(')');
    return close != std::string::npos && stat->compare(close, 4, ") Z ") == 0;
  };
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = dead();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!gone) kill(child, SIGKILL);
  CHECK(gone);
}

TEST_CASE("a command that prints past its bound is stopped, as on a timeout (thirty-third attack)") {
  // `yes` in a patch's Makefile grew root's memory and the build log without end.
  auto cmd = ks::proc::command({"yes", "CC fs/btrfs/x.o"}, std::chrono::seconds(60));
  cmd.max_output = 1 << 20;
  auto r = ks::proc::run(cmd);
  CHECK(r.overflowed);
  CHECK_FALSE(r.ok());
  CHECK(r.out.size() < (size_t(2) << 20));
  CHECK(r.describe().find("printed too much and was stopped") != std::string::npos);
  auto small = ks::proc::command({"echo", "fine"});
  small.max_output = 1 << 20;
  auto fine = ks::proc::run(small);
  CHECK(fine.ok());
  CHECK_FALSE(fine.overflowed);
}

TEST_CASE("a program is looked up only in absolute PATH entries, never in one that names where it runs (fifty-third attack)") {
  ks::test::TempDir dir("ks-runner-path");
  const auto planted = dir.path / "ks-planted-tool";
  ks::write_file(planted, "#!/bin/sh\nexit 0\n");
  fs::permissions(planted, fs::perms::owner_all);
  const char* old = std::getenv("PATH");
  const std::string saved = old ? old : "";
  const auto cwd = fs::current_path();
  fs::current_path(dir.path);
  ::setenv("PATH", ".:/usr/bin:/bin", 1);
  const auto relative = ks::proc::find_program("ks-planted-tool");
  ::setenv("PATH", (dir.path.string() + ":/usr/bin:/bin").c_str(), 1);
  const auto absolute = ks::proc::find_program("ks-planted-tool");
  ::setenv("PATH", saved.c_str(), 1);
  fs::current_path(cwd);
  CHECK_FALSE(relative);
  REQUIRE(absolute);  // the control: the same program, named by an absolute entry
  CHECK(*absolute == planted);
}

#pragma once
// A process that changes the machine and dies without unwinding, as under SIGKILL: what it
// changed stays for cleanup to find. For the cleanup tests, unit and integration alike.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <functional>

namespace ks::test {

// Runs WORK in a child process that then exits at once (no destructor runs); requires that
// WORK returned without throwing.
inline void in_killed_process(const std::function<void()>& work) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    try {
      work();
    } catch (...) {
      _exit(1);
    }
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
}

}  // namespace ks::test

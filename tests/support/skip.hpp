#pragma once
// Catch2 v2 has no SKIP: a test whose need is missing prints the reason and exits 77,
// which ctest (SKIP_RETURN_CODE 77) reports as "Skipped" - never as a silent pass.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace ks::test {

[[noreturn]] inline void skip(const std::string& reason) {
  std::fprintf(stdout, "SKIPPED: %s\n", reason.c_str());
  std::fflush(stdout);
  std::_Exit(77);
}

inline void require_root(const char* why) {
  if (geteuid() != 0) skip(std::string("needs root: ") + why);
}

}  // namespace ks::test

#define KS_SKIP_UNLESS(cond, reason) \
  do {                               \
    if (!(cond)) ::ks::test::skip(reason); \
  } while (0)

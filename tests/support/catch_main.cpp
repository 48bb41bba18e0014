// The tests' own main: what sudo left in the environment (SUDO_UID, SUDO_GID) would have
// ksandwich read and write as that user; a test that wants it sets it (ScopedEnv).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <stdlib.h>

int main(int argc, char* argv[]) {
  ::unsetenv("SUDO_UID");
  ::unsetenv("SUDO_GID");
  return Catch::Session().run(argc, argv);
}

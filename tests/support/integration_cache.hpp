#pragma once
// The kernel cache the integration tests build into: the default cache, the one the README's
// main job uses ($KSANDWICH_CACHE, else /var/cache/ksandwich), so that the tests' control and
// patched kernels of the default source are the main job's too and the README test finds them
// built. The tests only add kernels to it, except the kernel build test, which removes the
// four default-source kernels it builds (and builds them again). Its ccache serves every test
// kernel: all but the fixture commits are the default source with the same config, and the
// fixture's first commit is the same tree in git (ccache's paths are relative to each tree).
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "source/source.hpp"

namespace ks::test {

inline std::filesystem::path integration_cache() { return source::default_cache_root(); }

inline std::vector<std::pair<std::string, std::string>> integration_cache_env() {
  return {{"KSANDWICH_CACHE", integration_cache().string()},
          {"CCACHE_DIR", (integration_cache() / "ccache").string()}};
}

}  // namespace ks::test

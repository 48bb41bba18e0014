#pragma once
// The kernel cache the integration tests build into, apart from a user's kernels, and the
// environment that points `ksandwich` at it. Its ccache is the default cache's, which the
// kernel build test and the README's main job use too: every test kernel but the planted
// fixture commits is the default source with the same config, so one cold compile serves
// them all (ccache's paths are relative to each tree).
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "source/source.hpp"

namespace ks::test {

inline std::filesystem::path integration_cache() { return source::default_cache_root() / "integration"; }

inline std::vector<std::pair<std::string, std::string>> integration_cache_env() {
  return {{"KSANDWICH_CACHE", integration_cache().string()},
          {"CCACHE_DIR", (source::default_cache_root() / "ccache").string()}};
}

}  // namespace ks::test

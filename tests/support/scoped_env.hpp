#pragma once
// Sets environment variables for a scope and puts them back after.
#include <stdlib.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ks::test {

struct ScopedEnv {
  std::vector<std::pair<std::string, std::optional<std::string>>> saved;
  explicit ScopedEnv(const std::vector<std::pair<std::string, std::string>>& vars) {
    for (auto& [name, value] : vars) {
      const char* old = getenv(name.c_str());
      saved.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      setenv(name.c_str(), value.c_str(), 1);
    }
  }
  ~ScopedEnv() {
    for (auto& [name, value] : saved) value ? setenv(name.c_str(), value->c_str(), 1) : unsetenv(name.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

}  // namespace ks::test

#pragma once
// A directory under /tmp for one test, removed with everything in it when the test ends.
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace ks::test {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix = "ks-test") {
    std::string pattern = "/tmp/" + prefix + "-XXXXXX";
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp " + pattern + " failed");
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace ks::test

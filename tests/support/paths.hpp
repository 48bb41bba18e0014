#pragma once
// Where the tests find the source tree and the built binaries.
#include <filesystem>

namespace ks::test {
inline std::filesystem::path source_dir() { return KS_SOURCE_DIR; }
inline std::filesystem::path binary_dir() { return KS_BINARY_DIR; }
inline std::filesystem::path agent_binary() { return binary_dir() / "bin/ksandwich-agent"; }
inline std::filesystem::path ksandwich_binary() { return binary_dir() / "bin/ksandwich"; }
}  // namespace ks::test

// libFuzzer: the journal reader on any bytes in DIR/logs/journal.jsonl (a file in a run
// directory, which someone else may have written). It must read without a crash and keep
// only lines sealed with the key; the seeds are sealed with the key used here.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "util/error.hpp"
#include "util/files.hpp"
#include "util/journal.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The seeds were sealed with this key for this place (a seal covers the journal's path).
  static const std::string key(32, 'k');
  static const auto file = [] {
    std::filesystem::path dir = "/tmp/ks-fuzz-journal";
    std::filesystem::create_directories(dir);
    return dir / "journal.jsonl";
  }();
  ks::write_file(file, std::string(reinterpret_cast<const char*>(data), size));
  try {
    (void)ks::journal::read(file, key).pending();
  } catch (const ks::SystemError&) {  // e.g. larger than a run writes
  }
  return 0;
}

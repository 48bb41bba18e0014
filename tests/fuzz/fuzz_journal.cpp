// libFuzzer: the journal reader on any bytes as DIR/logs/journal.jsonl (a file in a run
// directory, which someone else may have written). It must read without a crash and keep
// only lines sealed with the key; the seeds are sealed with the key used here.

#include <cstddef>
#include <cstdint>
#include <string>

#include "util/error.hpp"
#include "util/journal.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The seeds were sealed with this key for this place (a seal covers the journal's path; the
  // text is parsed as if it were there, nothing is written).
  static const std::string key(32, 'k');
  try {
    (void)ks::journal::parse(std::string_view(reinterpret_cast<const char*>(data), size), key,
                             "/tmp/ks-fuzz-journal/journal.jsonl")
        .pending();
  } catch (const ks::SystemError&) {
  }
  return 0;
}

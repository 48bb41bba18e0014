// libFuzzer: the mail parser on any bytes (what `series --mbox`, `run` and `build` do with a
// patch file or mailbox someone sent), series' split of it, and the pick of one series out of
// a thread (`--message-id`: the input's first line is the id, the rest the thread). Refusing is fine (UserError,
// exit 2); anything else is a finding, and so is a header value of several lines.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "kernel/patches.hpp"
#include "kernel/series.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)ks::kernel::parse_patch_file(text, "fuzz.patch");
    for (auto& file : ks::kernel::split_series(text, "fuzz.mbox"))
      if (file.subject.find_first_of("\r\n") != std::string::npos) std::abort();
  } catch (const ks::UserError&) {
  }
  try {
    auto newline = text.find('\n');
    if (newline != std::string::npos)
      (void)ks::kernel::parse_patch_file(ks::kernel::select_series(text.substr(newline + 1), text.substr(0, newline), "t"), "t");
  } catch (const ks::UserError&) {
  }
  return 0;
}

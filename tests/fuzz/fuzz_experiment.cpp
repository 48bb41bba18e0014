// libFuzzer: the experiment parser on any bytes. Refusing is fine (UserError, which the CLI
// turns into exit 2); any other exception, a crash or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "experiment/experiment.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto e = ks::experiment::parse_text(text, "fuzz.json");
    (void)ks::experiment::plan_points(e);  // what `run --dry-run` does next
  } catch (const ks::UserError&) {
  }
  return 0;
}

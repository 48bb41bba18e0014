// libFuzzer: the bundle loader on any bytes, and for what loads, validate's recomputation
// of the analysis from the rows (what `validate` and `report` do with a bundle someone sent).
// Refusing is fine (UserError, exit 2); anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "experiment/strict_json.hpp"
#include "pipeline/bundle_file.hpp"
#include "pipeline/validate.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto bundle = ks::pipeline::parse_bundle_text(text, "fuzz.json");
    (void)ks::pipeline::check_recomputation(ks::experiment::parse_json_strict(text, "fuzz.json"), bundle);
  } catch (const ks::UserError&) {
  }
  return 0;
}

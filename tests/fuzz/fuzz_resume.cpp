// libFuzzer: the resume loader on any bytes as bundle.json (what `run --resume DIR` reads
// before it goes on): the bundle read strictly, its experiment parsed, the points checked
// against the plan. Refusing is fine (UserError, exit 2); anything else is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "experiment/experiment.hpp"
#include "pipeline/bundle_file.hpp"
#include "pipeline/run.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto dir = std::filesystem::temp_directory_path() / ("ks-fuzz-resume-" + std::to_string(::getpid()));
  static const bool made = std::filesystem::create_directories(dir) || true;
  (void)made;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto bundle = ks::pipeline::parse_bundle_text(text, "fuzz.json");
    ks::pipeline::check_resumable(bundle, ks::experiment::parse(bundle.experiment), dir);
  } catch (const ks::UserError&) {
  }
  return 0;
}

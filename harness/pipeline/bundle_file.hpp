#pragma once
// Reading, analysing and checking bundles written by `ksandwich run`.
#include <filesystem>
#include <string>
#include <vector>

#include "evidence/bundle.hpp"
#include "experiment/experiment.hpp"

namespace ks::pipeline {

// Throws UserError when the file is missing or is not a bundle.
evidence::Bundle load_bundle(const std::filesystem::path& path);

// The analysis of a bundle's rows under its experiment's scheme and gates. Deterministic:
// the same bundle always gives the same analysis (the bootstrap is seeded).
evidence::Analysis analyze_bundle(const experiment::Experiment& e, const evidence::Bundle& b);

// Problems found: schema violations (results-schema/bundle.schema.json, checked with
// python3-jsonschema) and arithmetic that does not add up. Empty means valid.
std::vector<std::string> validate_bundle_file(const std::filesystem::path& path,
                                              const std::filesystem::path& schema_dir);

// The arithmetic part alone (pure): rows, points, and the analysis recomputed.
std::vector<std::string> check_arithmetic(const evidence::Bundle& b);

}  // namespace ks::pipeline

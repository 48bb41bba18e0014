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

// The text of the bundle file at PATH; UserError when it does not exist.
std::string read_bundle_text(const std::filesystem::path& path);

// TEXT read strictly (no NUL, no duplicate key, bounded nesting) into the model; UserError
// naming ORIGIN when it is not a bundle. What load_bundle does after reading the file.
evidence::Bundle parse_bundle_text(const std::string& text, const std::string& origin);

// The analysis of a bundle's rows under its experiment's scheme and gates. Deterministic:
// the same bundle always gives the same analysis (the bootstrap is seeded).
evidence::Analysis analyze_bundle(const experiment::Experiment& e, const evidence::Bundle& b);

}  // namespace ks::pipeline

#pragma once
// Reading, analysing and checking bundles written by `ksandwich run`.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evidence/bundle.hpp"
#include "experiment/experiment.hpp"
#include "report/report.hpp"

namespace ks::pipeline {

// A bundle as JSON text (bundle.json) or gzip-compressed (bundle.json.gz, told by its
// content, not its name). Throws UserError when the file is missing or is not a bundle.
evidence::Bundle load_bundle(const std::filesystem::path& path);

// The text of a bundle file, decompressed when it is gzip (COMPRESSED says whether it was):
// the one place bundle files are read. UserError when it does not exist.
std::string read_bundle_text(const std::filesystem::path& path, bool* compressed = nullptr);

// TEXT read strictly (no NUL, no duplicate key, bounded nesting) into the model; UserError
// naming ORIGIN when it is not a bundle. What load_bundle does after reading the file.
evidence::Bundle parse_bundle_text(const std::string& text, const std::string& origin);

// UserError naming ORIGIN unless the words readers build lines from (names, arms, audit
// fields, profiled functions) and the number of points are what a run writes: what
// parse_bundle_text checks once the model has read the bundle.
void require_bundle_words(const evidence::Bundle& b, const std::string& origin);

// A bundle is well under a MiB (a nightly's with every kernel log: a few); a file beyond this
// is not one.
inline constexpr size_t kMaxBundleFile = size_t(16) << 20;

// Whether DATA starts like a gzip file (RFC 1952 magic bytes).
bool is_gzip(std::string_view data);

// The compressed copy a run writes beside bundle.json: small enough to attach to a mail.
inline constexpr const char* kCompressedBundleName = "bundle.json.gz";

// The bundle of the run directory DIR: bundle.json, else the compressed copy (what a mail
// or an archive kept) when only that exists; DIR/bundle.json when neither does.
std::filesystem::path bundle_in(const std::filesystem::path& dir);

// Writes TEXT gzip-compressed (RFC 1952, what `gzip -d` and `zcat` read) to PATH atomically.
void write_compressed_bundle(const std::filesystem::path& path, const std::string& text);

// The bundle TEXT as the reply attaches it: compressed as write_compressed_bundle does (the
// same bytes as the bundle.json.gz a run wrote), named kCompressedBundleName. Made from the
// text that was read and checked, never from a file found beside it (another user's link
// there would attach whatever it leads to).
report::Attachment bundle_attachment(const std::string& text);

// The plan a run of E writes for PLAN's points (bundle.plan).
nlohmann::json plan_json(const experiment::Experiment& e, const std::vector<experiment::PlannedPoint>& plan);

// E sized as bundle B's plan says (a confirm run's plan.blocks, within the experiment's
// min_blocks to max_blocks, and plan.replacements, up to replacement_blocks); or why B's plan
// cannot be a run of E's: a size outside those, or points other than the ones a run of that
// size plans. What a resume and every reader check first.
std::optional<std::string> size_as_planned(const evidence::Bundle& b, experiment::Experiment& e);

// The analysis of a bundle's rows under its experiment's scheme and gates. Deterministic:
// the same bundle always gives the same analysis (the bootstrap is seeded).
evidence::Analysis analyze_bundle(const experiment::Experiment& e, const evidence::Bundle& b);

}  // namespace ks::pipeline

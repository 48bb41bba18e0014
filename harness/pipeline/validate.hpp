#pragma once
// `ksandwich validate`: is this bundle what a run of ksandwich wrote, untouched? Two checks:
// its shape against the schema compiled into the binary (results-schema/bundle.schema.json,
// checked by Debian's python3-jsonschema, draft 2020-12), and every derived field and gate
// recomputed from the raw rows and points with the analysis `run` uses.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "evidence/bundle.hpp"

namespace ks::pipeline {

struct SchemaError {
  std::string path;     // JSON pointer into the bundle ("" for the whole document)
  std::string message;  // what the schema says is wrong there
};

// A field whose value does not follow from the raw data. `bundle` is what the file says,
// `recomputed` what the rows and points give (null when absent on that side); `note` says
// more where a value alone does not (a point id that appears twice).
struct Mismatch {
  std::string path;  // JSON pointer, e.g. /analysis/workloads/0/delta_pct_skip_first
  nlohmann::json bundle;
  nlohmann::json recomputed;
  std::string note;
};

struct Validation {
  std::vector<SchemaError> schema_errors;
  std::vector<Mismatch> recomputed_mismatches;
  bool valid() const { return schema_errors.empty() && recomputed_mismatches.empty(); }
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SchemaError, path, message)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Mismatch, path, bundle, recomputed, note)
// {"valid": bool, "schema_errors": [...], "recomputed_mismatches": [...]}
void to_json(nlohmann::json& j, const Validation& v);

// One line each, for people: "/verdict: the bundle says NO_CHANGE, the raw data give INVALID".
std::string describe(const SchemaError& e);
std::string describe(const Mismatch& m);

// Schema errors of the bundle TEXT (as read_bundle_text gives it) against the embedded bundle
// schema, in document order.
// Throws UserError when python3-jsonschema cannot be run.
std::vector<SchemaError> check_bundle_schema(const std::string& bundle_text);

// Pure: B judged again with this ksandwich - its matched-build audit from its two builds, its
// analysis and verdict from its experiment, points and raw rows (`ksandwich analyze`). UserError when the experiment
// cannot be read or the analysis cannot be made (the message says which).
evidence::Bundle rejudged(const evidence::Bundle& b);

// Pure: where B's stored audit, analysis, verdict and exit code (RAW: B as parsed JSON) differ
// from AGAIN, B re-judged (rejudged(B)). No analysis stored is honest while every point is pending.
std::vector<Mismatch> judgement_changes(const nlohmann::json& raw, const evidence::Bundle& b,
                                        const evidence::Bundle& again);

// Pure: recomputes the analysis from RAW (the bundle as parsed JSON) and B (the same, read
// into the model) and lists every field and gate that differs, numbers within a relative
// 1e-9. Also: rows that name a point that does not exist or ran another arm, ns_per_op
// that is not elapsed_ns / ops, a point id used twice.
std::vector<Mismatch> check_recomputation(const nlohmann::json& raw, const evidence::Bundle& b);

// Both checks; the recomputation only when the schema holds (it needs the shape right).
// Throws UserError when PATH does not exist.
// TEXT, when given, receives the JSON text checked (inflated): what a caller then uses, so
// that what it takes is what was checked, whatever the file holds by then.
Validation validate_bundle_file(const std::filesystem::path& path, std::string* text = nullptr);

// load_bundle for renderers: refuses (UserError, exit 2) a bundle that fails its schema,
// naming the first failures, or whose parts do not agree (check_recomputation's first checks).
// TEXT, when given, receives the JSON text read (inflated).
evidence::Bundle load_schema_valid_bundle(const std::filesystem::path& path, std::string* text = nullptr);

// load_schema_valid_bundle for what speaks for ksandwich (the reply a maintainer sends with
// its trailers, JUnit for a CI gate): refuses (UserError, exit 2) a bundle whose stored
// analysis, verdict or gates do not follow from its raw rows (thirtieth attack: an edited
// verdict mailed as "Verdict: NO_CHANGE" with a Tested-by: trailer).
evidence::Bundle load_recomputed_bundle(const std::filesystem::path& path, std::string* text = nullptr);

}  // namespace ks::pipeline

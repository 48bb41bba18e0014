#include "pipeline/validate.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>

#include "analysis/analyze.hpp"
#include "evidence/schemas.hpp"
#include "experiment/experiment.hpp"
#include "experiment/strict_json.hpp"
#include "pipeline/bundle_file.hpp"
#include "pipeline/kernels.hpp"
#include "proc/runner.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::pipeline {
namespace {

using nlohmann::json;

// Debian's python3-jsonschema (draft 2020-12), the validator tests/scripts/test_schemas.sh
// checks the schemas themselves with: one reading of the schema everywhere. The schema
// comes from the binary (argv[1]); the bundle from a private copy of the text ksandwich
// read (argv[2]), so both check the same bytes.
// One JSON object a line: {"path": "/rows/3/ops", "message": "..."}.
constexpr const char* kSchemaCheck = R"PY(
import itertools, json, sys
try:
    import jsonschema
except ImportError:
    print("python3-jsonschema is not installed")
    sys.exit(3)
schema = json.loads(sys.argv[1])
with open(sys.argv[2], "rb") as f:
    doc = json.loads(f.read())
validator = jsonschema.Draft202012Validator(schema)
# The first 100 errors, each made as it is found: 500,000 wrong items took 19 s and 1.8 GB
# when every one was made, sorted and printed.
errors = list(itertools.islice(validator.iter_errors(doc), 101))
for e in sorted(errors[:100], key=lambda e: [str(p) for p in e.absolute_path]):
    path = "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in e.absolute_path)
    print(json.dumps({"path": path, "message": e.message[:300]}))
if len(errors) > 100:
    print(json.dumps({"path": "", "message": "and more errors (the first 100 are shown)"}))
sys.exit(1 if errors else 0)
)PY";

// Recomputed values are bit-for-bit the same on one machine; the tolerance covers libm
// differences between machines, not edits.
bool close_enough(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)) + 1e-12;
}

bool equal_values(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return close_enough(a.get<double>(), b.get<double>());
  if (a.is_array() && b.is_array())
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), equal_values);
  if (a.is_object() && b.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto& [k, v] : a.items())
      if (!b.contains(k) || !equal_values(v, b[k])) return false;
    return true;
  }
  return a == b;
}

std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

bool all_scalars(const json& a) {
  return std::none_of(a.begin(), a.end(), [](auto& x) { return x.is_structured(); });
}

// Gates are known by name and scope, not by position: one gate more or less is one line.
bool all_gates(const json& a) {
  return std::all_of(a.begin(), a.end(), [](auto& g) { return g.is_object() && g.contains("name") && g.contains("scope"); });
}

void diff(const json& stored, const json& computed, const std::string& path, std::vector<Mismatch>& out);

// The n-th gate of a name and scope in one list is the n-th of the other: a point's direct-hit
// gates share both, one per function, in the order the analysis gives them (forty-sixth
// attack: each matched the first, so honest bundles were refused and a copy of a passing
// gate over a failing one passed).
void diff_gates(const json& stored, const json& computed, const std::string& path, std::vector<Mismatch>& out) {
  auto by_key = [](const json& gates) {
    std::map<std::string, std::vector<const json*>> index;
    for (auto& g : gates) index[g["name"].dump() + g["scope"].dump()].push_back(&g);
    return index;
  };
  auto where = [&](const json& g, size_t n) {
    auto text = [](const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
    return fmt::format("{}[{}: {}{}]", path, text(g["name"]), text(g["scope"]), n ? fmt::format(" #{}", n + 1) : "");
  };
  const auto stored_by = by_key(stored), computed_by = by_key(computed);
  auto count = [](const auto& index, const std::string& key) {
    auto it = index.find(key);
    return it == index.end() ? size_t(0) : it->second.size();
  };
  for (auto& [key, gates] : stored_by)
    for (size_t n = 0; n < gates.size(); ++n)
      if (n < count(computed_by, key))
        diff(*gates[n], *computed_by.at(key)[n], where(*gates[n], n), out);
      else
        out.push_back({where(*gates[n], n), *gates[n], nullptr, "a gate the analysis does not give"});
  for (auto& [key, gates] : computed_by)
    for (size_t n = count(stored_by, key); n < gates.size(); ++n)
      out.push_back({where(*gates[n], n), nullptr, *gates[n], "a gate missing from the bundle"});
}

// Every place where STORED (the bundle) and COMPUTED (the raw data) disagree, as leaves:
// objects key by key, gates by name and scope, other arrays of objects entry by entry,
// scalars and arrays of scalars whole.
void diff(const json& stored, const json& computed, const std::string& path, std::vector<Mismatch>& out) {
  if (stored.is_object() && computed.is_object()) {
    for (auto& [k, v] : stored.items()) {
      auto p = path + "/" + pointer_token(k);
      if (!computed.contains(k)) out.push_back({p, v, nullptr, "not something the analysis computes"});
      else diff(v, computed[k], p, out);
    }
    for (auto& [k, v] : computed.items())
      if (!stored.contains(k)) out.push_back({path + "/" + pointer_token(k), nullptr, v, "missing from the bundle"});
    return;
  }
  if (stored.is_array() && computed.is_array() && !(all_scalars(stored) && all_scalars(computed))) {
    if (all_gates(stored) && all_gates(computed)) return diff_gates(stored, computed, path, out);
    if (stored.size() != computed.size())
      out.push_back({path, stored.size(), computed.size(), "number of entries"});
    for (size_t i = 0; i < std::min(stored.size(), computed.size()); ++i)
      diff(stored[i], computed[i], path + "/" + std::to_string(i), out);
    return;
  }
  if (!equal_values(stored, computed)) out.push_back({path, stored, computed, ""});
}

// The bundle's parts agree: its name is its experiment's, which a history files it under
// (seventy-first attack: a run of one experiment added as a night of another), rows and points
// agree with each other, and ns_per_op is elapsed_ns / ops.
void check_parts(const evidence::Bundle& b, std::vector<Mismatch>& out) {
  const json name = b.experiment.is_object() ? b.experiment.value("name", json()) : json();
  if (name != json(b.experiment_name))
    out.push_back({"/experiment_name", b.experiment_name, name, "the name of the experiment it ran"});
  std::map<int, std::string> arm_of;
  for (size_t i = 0; i < b.points.size(); ++i)
    if (!arm_of.emplace(b.points[i].id, b.points[i].arm).second)
      out.push_back({fmt::format("/points/{}/id", i), b.points[i].id, nullptr, "this point id appears twice"});
  for (size_t i = 0; i < b.rows.size(); ++i) {
    auto& r = b.rows[i];
    auto where = fmt::format("/rows/{}", i);
    auto arm = arm_of.find(r.point);
    if (arm == arm_of.end())
      out.push_back({where + "/point", r.point, nullptr, "no point has this id"});
    else if (arm->second != r.arm)
      out.push_back({where + "/arm", r.arm, arm->second, fmt::format("point {} ran {}", r.point, arm->second)});
    // A time per op of no ops is no measurement (thirty-sixth attack: patched rows of ops 0
    // carried a third of their elapsed time as ns_per_op, and validate passed them over).
    if (r.ns_per_op && r.ops == 0)
      out.push_back({where + "/ops", r.ops, nullptr, "a row with a time per op did no ops"});
    if (r.ns_per_op && r.ops > 0) {
      const double expected = double(r.elapsed_ns) / double(r.ops);
      // The agent rounds ns_per_op to what it prints.
      if (!close_enough(*r.ns_per_op, expected) && std::fabs(*r.ns_per_op - expected) > 1e-3)
        out.push_back({where + "/ns_per_op", *r.ns_per_op, expected, "elapsed_ns / ops"});
    }
  }
}

}  // namespace

void to_json(json& j, const Validation& v) {
  j = {{"valid", v.valid()}, {"schema_errors", v.schema_errors}, {"recomputed_mismatches", v.recomputed_mismatches}};
}

std::string describe(const SchemaError& e) {
  return fmt::format("schema: {}: {}", e.path.empty() ? "/" : e.path, e.message);
}

std::string describe(const Mismatch& m) {
  std::string line = m.path + ": ";
  if (m.bundle.is_null() && m.recomputed.is_null()) return line + m.note;
  if (m.recomputed.is_null()) line += fmt::format("the bundle says {}, the raw data give nothing", m.bundle.dump());
  else if (m.bundle.is_null()) line += fmt::format("the bundle lacks it, the raw data give {}", m.recomputed.dump());
  else line += fmt::format("the bundle says {}, the raw data give {}", m.bundle.dump(), m.recomputed.dump());
  return m.note.empty() ? line : line + " (" + m.note + ")";
}

std::vector<SchemaError> check_bundle_schema(const std::string& text) {
  // Debian's interpreter, where python3-jsonschema lives (a pyenv python may shadow it).
  std::string python = std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  if (!proc::have_program(python))
    throw UserError("cannot check the bundle's schema: python3 is not installed",
                    "apt-get install python3-jsonschema");
  // A directory of its own, so no one swaps the copy.
  auto dir = ScopedDir::temporary("ksandwich-schema-");
  const auto copy = dir.path() / "bundle.json";
  write_file_atomic(copy, text);
  // -I: isolated, so Python imports nothing from the current directory (a jsonschema.py
  // planted where root happens to be would run as root) and reads no PYTHON* variable.
  auto cmd = proc::command({python, "-I", "-c", kSchemaCheck, std::string(evidence::schema_text("bundle.schema.json")),
                            copy.string()},
                           std::chrono::seconds(120));
  cmd.cwd = dir.path();
  auto r = proc::run(cmd);
  if (r.exit_code == 3)
    throw UserError("cannot check the bundle's schema: " + trim(r.out), "apt-get install python3-jsonschema");
  std::vector<SchemaError> errors;
  for (auto& line : split(r.out, '\n')) {
    if (trim(line).empty()) continue;
    auto j = json::parse(line, nullptr, false);
    if (j.is_discarded()) errors.push_back({"", trim(line)});
    else errors.push_back(j.get<SchemaError>());
  }
  if (!r.ok() && (r.exit_code != 1 || errors.empty())) {
    // Not a list of schema errors: the checker itself failed. Its last line says why (the
    // command line holds the whole schema and script, no use to print).
    auto lines = split(trim(r.err), '\n');
    errors = {{"", "the schema check (python3-jsonschema) failed: " +
                       (r.timed_out ? std::string("it timed out") : one_line(lines.back()))}};
  }
  return errors;
}

namespace {

// B's builds with their matched-build audit (audit, matched) as the two builds' identities give
// it (pipeline/kernels.hpp reaudited): a stored audit of all PASS beside a patched kernel of
// another compiler and config passed validate (thirty-seventh attack), and analyze kept a
// forged one as "0 fields differ" (sixty-first). Whether config and release may differ is the
// experiment's word.
json reaudited_builds(const evidence::Bundle& b) {
  bool later_commit = false;
  try {
    later_commit = experiment::patched_at_later_commit(experiment::parse(b.experiment));
  } catch (const UserError&) {
  }
  return reaudited(b.builds, later_commit);
}

}  // namespace

evidence::Bundle rejudged(const evidence::Bundle& b) {
  experiment::Experiment e;
  try {
    e = experiment::parse(b.experiment);
  } catch (const UserError& err) {
    throw UserError(std::string("the bundle's experiment cannot be read, so nothing can be recomputed: ") + err.what(),
                    "the bundle was edited, or made by an incompatible version");
  }
  evidence::Bundle again = b;
  again.builds = reaudited_builds(b);
  again.analysis = analyze_bundle(e, again);
  again.verdict = again.analysis->verdict;
  return again;
}

std::vector<Mismatch> judgement_changes(const json& raw, const evidence::Bundle& b, const evidence::Bundle& again) {
  std::vector<Mismatch> out;
  if (again.builds.is_object() && b.builds.is_object())
    for (const char* key : {"audit", "matched"})
      if (b.builds.value(key, json()) != again.builds.value(key, json()))
        out.push_back({std::string("/builds/") + key, b.builds.value(key, json()), again.builds.value(key, json()),
                       "the matched-build audit of builds.control and builds.patched"});
  if (!b.analysis) {
    // A run writes its bundle before the first point ends: no analysis yet is honest then.
    if (std::any_of(b.points.begin(), b.points.end(), [](auto& p) { return p.status != "pending"; }))
      out.push_back({"/analysis", nullptr, again.analysis->verdict, "absent, though points have finished"});
    // ... and its verdict is the one it starts with (thirty-first attack: "NO_CHANGE" on a run
    // that measured nothing, mailed with a Tested-by: trailer).
    if (raw.value("verdict", json()) != "INCONCLUSIVE")
      out.push_back({"/verdict", raw.value("verdict", json()), "INCONCLUSIVE", "a run says INCONCLUSIVE until it has an analysis"});
    return out;
  }
  diff(raw.value("analysis", json()), evidence::to_json(*again.analysis), "/analysis", out);
  diff(raw.value("verdict", json()), again.verdict, "/verdict", out);
  // What a CI job gated on this bundle would see: named, so the consequence is plain.
  const int stored_exit = analysis::exit_code_for(b), recomputed_exit = analysis::exit_code_for(again);
  if (stored_exit != recomputed_exit)
    out.push_back({"(exit code)", stored_exit, recomputed_exit, "the exit code of the run the bundle claims"});
  return out;
}

std::vector<Mismatch> check_recomputation(const json& raw, const evidence::Bundle& b) {
  std::vector<Mismatch> out;
  check_parts(b, out);
  try {
    auto changes = judgement_changes(raw, b, rejudged(b));
    out.insert(out.end(), changes.begin(), changes.end());
  } catch (const UserError& err) {
    out.push_back({"/analysis", nullptr, nullptr, std::string("cannot be recomputed: ") + err.what()});
  }
  return out;
}

Validation validate_bundle_file(const std::filesystem::path& path, std::string* text_read) {
  Validation v;
  auto text = read_bundle_text(path);
  if (text_read) *text_read = text;
  json raw;
  evidence::Bundle b;
  try {
    raw = experiment::parse_json_strict(text, path.string());
  } catch (const UserError& err) {
    v.schema_errors.push_back({"", one_line(err.what())});  // it quotes what it last read
    return v;
  }
  try {
    b = evidence::from_json(raw);
  } catch (const std::exception& err) {  // json's, or a word the model knows no meaning of
    // A shape the model cannot read: the schema says where.
    v.schema_errors = check_bundle_schema(text);
    if (v.schema_errors.empty()) v.schema_errors.push_back({"", std::string("not a bundle: ") + one_line(err.what())});
    return v;
  }
  // What every reader refuses, refused here too, and before the schema checker spends a
  // minute and gigabytes on 30,000 points (twenty-first attack).
  try {
    require_bundle_words(b, path.string());
  } catch (const UserError& err) {
    v.schema_errors.push_back({"", err.what()});
    return v;
  }
  v.schema_errors = check_bundle_schema(text);
  if (!v.schema_errors.empty()) return v;  // the recomputation needs the shape right
  v.recomputed_mismatches = check_recomputation(raw, b);
  return v;
}

evidence::Bundle load_schema_valid_bundle(const std::filesystem::path& path, std::string* text_read) {
  // JSON first (the schema check cannot name a syntax error), then the schema, then the
  // model, whose own complaints are less telling than the schema's.
  auto text = read_bundle_text(path);
  (void)experiment::parse_json_strict(text, path.string());
  auto errors = check_bundle_schema(text);
  if (!errors.empty()) {
    std::string first;
    for (size_t i = 0; i < std::min<size_t>(errors.size(), 3); ++i) first += "\n  " + describe(errors[i]);
    throw UserError(fmt::format("{} does not match the bundle schema ({} error(s)); the first:{}", path.string(),
                                errors.size(), first),
                    "`ksandwich validate " + shell_quote(path.string()) + "` lists every problem");
  }
  auto bundle = parse_bundle_text(text, path.string());
  // Its parts agree, or nothing is judged from them (sixty-seventh attack: the patched rows'
  // ns_per_op tripled, elapsed_ns left, and compare and analyze said REGRESSION, exit 1, where
  // validate refused them).
  std::vector<Mismatch> parts;
  check_parts(bundle, parts);
  if (!parts.empty())
    throw UserError(fmt::format("{}: its parts do not agree ({}{})", path.string(), one_line_cut(describe(parts.front())),
                                parts.size() > 1 ? fmt::format(", and {} more", parts.size() - 1) : ""),
                    "the bundle was edited; `ksandwich validate " + shell_quote(path.string()) + "` lists every problem");
  if (text_read) *text_read = std::move(text);
  return bundle;
}

evidence::Bundle load_recomputed_bundle(const std::filesystem::path& path, std::string* text_read) {
  std::string text;
  auto bundle = load_schema_valid_bundle(path, &text);
  auto mismatches = check_recomputation(nlohmann::json::parse(text), bundle);
  if (!mismatches.empty())
    throw UserError(fmt::format("{}: what it says does not follow from its raw data ({}{})", path.string(),
                                one_line(describe(mismatches.front())),
                                mismatches.size() > 1 ? fmt::format(", and {} more", mismatches.size() - 1) : ""),
                    "`ksandwich validate " + shell_quote(path.string()) + "` lists every difference; `ksandwich analyze` "
                    "judges its raw data again");
  if (text_read) *text_read = std::move(text);
  return bundle;
}

}  // namespace ks::pipeline

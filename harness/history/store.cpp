#include "history/store.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>
#include <vector>

#include "evidence/clock.hpp"
#include "pipeline/bundle_file.hpp"
#include "pipeline/compare.hpp"
#include "pipeline/validate.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"
#include "util/ownership.hpp"

namespace ks::history {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kSchema = R"SQL(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  experiment TEXT NOT NULL,
  created_at TEXT NOT NULL,
  added_at TEXT NOT NULL,
  backend TEXT NOT NULL,
  control_source TEXT NOT NULL,
  patched_source TEXT NOT NULL,
  machine_fingerprint TEXT NOT NULL,
  machine TEXT NOT NULL,
  tool_version TEXT NOT NULL,
  tool_revision TEXT NOT NULL,
  verdict TEXT NOT NULL,
  bundle_path TEXT NOT NULL,
  bundle_sha256 TEXT NOT NULL UNIQUE,
  clock TEXT NOT NULL DEFAULT 'wall'
);
CREATE INDEX runs_by_experiment ON runs (experiment, created_at);
CREATE TABLE workloads (
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  workload TEXT NOT NULL,
  metric TEXT NOT NULL,
  ratio REAL, ratio_low REAL, ratio_high REAL, level REAL,
  mde_pct REAL,
  verdict TEXT NOT NULL,
  material INTEGER NOT NULL,
  PRIMARY KEY (run_id, workload)
);
)SQL";

// Version 1 was kSchema without the clock column, which the migration adds so.
constexpr std::string_view kClockColumn = ",\n  clock TEXT NOT NULL DEFAULT 'wall'";
constexpr const char* kAddClock = "ALTER TABLE runs ADD COLUMN clock TEXT NOT NULL DEFAULT ''";

// What sqlite_master holds (type, name, table, SQL of each object, in name order), the SQL
// without its white space, which SQLite's ALTER TABLE edits as it likes and which changes no
// object's meaning ("TEXTNOT NULL" would only change a type's name: no code).
using SchemaRows = std::vector<std::array<std::string, 4>>;
SchemaRows schema_rows(Database& db) {
  SchemaRows rows;
  for (auto s = db.prepare("SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master ORDER BY name"); s.step();) {
    auto sql = s.text(3);
    std::erase_if(sql, [](unsigned char c) { return std::isspace(c); });
    rows.push_back({s.text(0), s.text(1), s.text(2), sql});
  }
  return rows;
}

// Whether DB's schema is, object for object and word for word, one ksandwich makes at VERSION:
// kSchema, version 1's, or version 1's migrated. Anything else there (a view, a trigger, a
// generated column, a CHECK or an index on an expression) is code of whoever wrote the file,
// run when it is read or written (fifty-third and fifty-fourth attacks: an endless recursive
// view, a trigger stored as type 'TRIGGER', a generated column costing seconds a row).
bool schema_is_ours(Database& db, int version) {
  const auto v1 = [] {
    std::string text = kSchema;
    return text.erase(text.find(kClockColumn), kClockColumn.size());
  }();
  const auto made = [](const std::string& schema, bool migrated) {
    Database fresh(":memory:");
    fresh.exec(schema);
    if (migrated) fresh.exec(kAddClock);
    return schema_rows(fresh);
  };
  const auto theirs = schema_rows(db);
  if (version == 1) return theirs == made(v1, false);
  return theirs == made(kSchema, false) || theirs == made(v1, true);
}

constexpr const char* kRunColumns =
    "id, experiment, created_at, added_at, backend, control_source, patched_source, machine_fingerprint, "
    "machine, tool_version, tool_revision, verdict, bundle_path, bundle_sha256, clock";

RunRecord run_from(const Statement& s) {
  RunRecord r;
  r.id = s.integer(0);
  std::string* fields[] = {&r.experiment,   &r.created_at,   &r.added_at,      &r.backend,
                           &r.control_source, &r.patched_source, &r.machine_fingerprint, &r.machine,
                           &r.tool_version, &r.tool_revision, &r.verdict,       &r.bundle_path,
                           &r.bundle_sha256, &r.clock};
  for (int i = 0; i < 14; ++i) *fields[i] = s.text(i + 1);
  return r;
}

std::string string_at(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

}  // namespace

void to_json(json& j, const WorkloadRecord& w) {
  auto number = [](std::optional<double> v) { return v ? json(*v) : json(nullptr); };
  j = {{"run_id", w.run_id}, {"workload", w.workload}, {"metric", w.metric}, {"ratio", number(w.ratio)},
       {"ratio_low", number(w.ratio_low)}, {"ratio_high", number(w.ratio_high)}, {"level", number(w.level)},
       {"mde_pct", number(w.mde_pct)},
       {"verdict", w.verdict}, {"material", w.material}};
}

std::string source_identity(const evidence::Bundle& b, const std::string& arm) {
  if (!b.builds.is_object() || !b.builds.contains(arm) || !b.builds[arm].is_object())
    return bounded_identity("running kernel " + string_at(b.machine, "kernel_release"));
  auto& build = b.builds[arm];
  json source = build.value("source", json::object());
  // An arm built at a later commit names that commit; its diff is not a patch of the user's.
  json later = build.value("commit", json::object());
  std::string commit = !string_at(later, "sha").empty() ? string_at(later, "sha") : string_at(source, "commit");
  std::string id = !commit.empty() ? "commit " + commit
                                   : string_at(source, "version") + " (sha256 " +
                                         string_at(source, "archive_sha256").substr(0, 12) + ")";
  if (build.contains("patches") && build["patches"].is_array())
    for (auto& p : build["patches"]) {
      if (id.size() > kMaxIdentity) break;
      if (string_at(later, "file").empty() || string_at(p, "file") != string_at(later, "file"))
        id += " + patch " + string_at(p, "sha256").substr(0, 12);
    }
  return bounded_identity(id);
}

std::string bounded_identity(const std::string& id) {
  return id.size() > kMaxIdentity ? id.substr(0, kMaxIdentity - 3) + "..." : id;
}

namespace {

// PATH, when the store may open it: kExisting never creates the file SQLite would make.
// For root, a history no one else can change: its rows name the bundles root then reads (as
// many and as large as they like), and SQLite runs the views and triggers it holds.
const fs::path& openable(const fs::path& path, Store::Open open) {
  if (open == Store::Open::kExisting) {
    AsInvokingUser as;  // under sudo, nothing said of a place they cannot see
    std::error_code ec;
    if (!fs::exists(path, ec))
      throw UserError(path.string() + " does not exist" + (as.who().empty() ? "" : " for " + as.who()),
                      "make it with `ksandwich history add`");
  }
  if (auto why = untrusted_on_the_way(path, PathRole::kTrustedFile))
    throw UserError("history " + path.string() + ": " + *why + ", and root reads what its rows name",
                    "read it as the user who can change it (sudo -u THEM ksandwich history ...), not as root");
  // SQLite reads the journals it finds beside the file (-journal, -wal) and rolls them into it:
  // in a directory others may write to, even a sticky one, they could plant one.
  struct stat dir{};
  const auto parent = fs::absolute(path).parent_path();
  if (::geteuid() == 0 && ::stat(parent.c_str(), &dir) == 0 && others_may_write(parent, dir))
    throw UserError("history " + path.string() + ": " + parent.string() +
                        " lets others write in it, and SQLite rolls a journal it finds there into the history",
                    "keep the history in a directory only you (or root) can write to, e.g. results/history.sqlite");
  return path;
}

}  // namespace

Store::Store(const fs::path& path, Open open) : db_(openable(path, open)) {
  int version = 0;
  try {
    auto s = db_.prepare("PRAGMA user_version");
    if (s.step()) version = static_cast<int>(s.integer(0));
  } catch (const SystemError& e) {
    if (std::string_view(e.what()).find("locked") != std::string_view::npos)
      throw UserError(path.string() + " is locked by another writer (" + e.what() + ")",
                      "wait for the `history add` or `nightly` writing it to finish, then run this again");
    throw UserError(path.string() + " is not a ksandwich history (" + e.what() + ")",
                    "pass the SQLite file `ksandwich history add` made, or a new path");
  }
  if (version < 0)  // ksandwich's versions count up from 1 (forty-ninth attack: -5 read as current)
    throw UserError(fmt::format("{} is not a ksandwich history (schema version {})", path.string(), version),
                    "pass the file `ksandwich history add` or `nightly --history` wrote");
  if (version == 0 && open == Open::kExisting)
    throw UserError(path.string() + " is not a ksandwich history (it has no runs table)",
                    "pass the file `ksandwich history add` or `nightly --history` wrote");
  if (version > kSchemaVersion)
    throw UserError(fmt::format("{} has history schema version {}; this ksandwich reads up to {}", path.string(),
                                version, kSchemaVersion),
                    "use the ksandwich that wrote it, or a newer one");
  if (version > 0 && !schema_is_ours(db_, version))
    throw UserError(path.string() + " is not a ksandwich history: its schema is not the one ksandwich makes (a view, "
                                    "a trigger, or tables, columns or indexes of another kind)",
                    "pass the file `ksandwich history add` or `nightly --history` wrote");
  db_.exec("PRAGMA foreign_keys = ON");
  if (version == 0) {
    Transaction t(db_);
    auto tables = db_.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table'");
    tables.step();
    if (tables.integer(0) != 0)
      throw UserError(path.string() + " is a SQLite database but not a ksandwich history",
                      "pass a new path or a history made by `ksandwich history add`");
    db_.exec(kSchema);
    db_.exec(fmt::format("PRAGMA user_version = {}", kSchemaVersion));
    t.commit();
  } else if (version == 1) {
    // Version 1 had no clock column. Each run's clock comes from its bundle where that is
    // still a readable file (instruction-clock bundles are older than version 2); where it
    // is not, the clock is unknown ('') and never compared.
    Transaction t(db_);
    auto again = db_.prepare("PRAGMA user_version");  // another process may have migrated it meanwhile
    if (again.step() && again.integer(0) == 1) {
      db_.exec(kAddClock);
      std::vector<std::pair<int64_t, std::string>> bundles;
      for (auto s = db_.prepare("SELECT id, bundle_path FROM runs"); s.step();) bundles.emplace_back(s.integer(0), s.text(1));
      for (auto& [id, bundle_path] : bundles) {
        std::error_code ec;
        if (!fs::is_regular_file(bundle_path, ec) || fs::file_size(bundle_path, ec) > (256u << 20)) continue;
        try {
          auto set = db_.prepare("UPDATE runs SET clock = ?1 WHERE id = ?2");
          set.bind(1, evidence::bundle_clock(pipeline::load_bundle(bundle_path)).name).bind(2, id);
          set.run();
        } catch (const std::exception&) {  // not a bundle any more: the clock stays unknown
        }
      }
      db_.exec(fmt::format("PRAGMA user_version = {}", kSchemaVersion));
    }
    t.commit();
  }
}

Store::Added Store::add(const evidence::Bundle& b, const fs::path& path, const std::string& sha256,
                        const std::function<void()>& between) {
  Transaction t(db_);
  auto existing = db_.prepare("SELECT id FROM runs WHERE bundle_sha256 = ?1");
  existing.bind(1, sha256);
  if (existing.step()) return {existing.integer(0), true};
  // One experiment, one clock: a night measured in instructions beside one in wall time would
  // make a change point of the clock, not of the kernel.
  const auto& clock = evidence::bundle_clock(b);
  auto other = db_.prepare("SELECT clock FROM runs WHERE experiment = ?1 AND clock != ?2 AND clock != '' LIMIT 1");
  other.bind(1, b.experiment_name).bind(2, clock.name);
  if (other.step()) {
    // The file's word, which may name no clock (fifty-fifth attack: exit 70 on "bogus").
    const auto theirs = other.text(0);
    const auto& table = evidence::clock_table();
    const auto known = std::find_if(table.begin(), table.end(), [&](const auto& c) { return c.name == theirs; });
    throw UserError(fmt::format("this history's runs of {} were measured with the {} clock ({}), this bundle with {} "
                                "({})",
                                one_line(b.experiment_name), one_line(theirs),
                                known != table.end() ? known->measures : "a clock this ksandwich does not know",
                                clock.name, clock.measures),
                    "keep one history per clock: add it to another --history file, or set the experiment's \"clock\" "
                    "so every night measures the same way");
  }
  // One experiment, one machine, as compare has it: another machine's nights beside this one's
  // would make a change point of the machine (sixty-sixth attack: trend drew a 2-core Xeon's
  // night and a 192-core EPYC's as one series).
  auto elsewhere = db_.prepare("SELECT machine FROM runs WHERE experiment = ?1 AND machine_fingerprint != ?2 LIMIT 1");
  elsewhere.bind(1, b.experiment_name).bind(2, pipeline::machine_fingerprint(b));
  if (elsewhere.step())
    throw UserError(fmt::format("this history's runs of {} were measured on another machine ({}) than this bundle",
                                one_line_cut(b.experiment_name), one_line_cut(elsewhere.text(0))),
                    "keep one history per machine: add it to another --history file");
  // One run, one night, whatever its bytes: the same run copied with other whitespace or one
  // field changed counted twice in trend's statistics (seventy-first attack). A machine runs
  // one experiment at a time, so its name and start time are the run.
  auto same = db_.prepare("SELECT id FROM runs WHERE experiment = ?1 AND created_at = ?2 LIMIT 1");
  same.bind(1, b.experiment_name).bind(2, b.created_at);
  if (same.step())
    throw UserError(fmt::format("this history holds run {} already: {} of {}, as another file", same.integer(0),
                                one_line_cut(b.experiment_name), one_line_cut(b.created_at)),
                    "add each run once (a copy of a bundle, or one re-judged by analyze --out, is the same run)");

  auto insert = db_.prepare(
      "INSERT INTO runs (experiment, created_at, added_at, backend, control_source, patched_source, "
      "machine_fingerprint, machine, tool_version, tool_revision, verdict, bundle_path, bundle_sha256, clock) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)");
  std::string machine = string_at(b.machine, "cpu_model");
  if (b.machine.is_object() && b.machine.contains("cores")) machine += fmt::format(", {} cores", b.machine["cores"].dump());
  std::string values[] = {b.experiment_name, b.created_at, now_utc_iso8601(), b.backend,
                          source_identity(b, "control"), source_identity(b, "patched"),
                          pipeline::machine_fingerprint(b), machine, string_at(b.tool, "version"),
                          string_at(b.tool, "git_revision"), b.verdict, fs::absolute(path).lexically_normal().string(),
                          sha256, clock.name};
  for (int i = 0; i < 14; ++i) insert.bind(i + 1, values[i]);
  insert.run();
  int64_t id = db_.last_insert_id();
  if (between) between();

  for (auto& w : b.analysis->workloads) {
    auto workload = db_.prepare(
        "INSERT INTO workloads (run_id, workload, metric, ratio, ratio_low, ratio_high, level, mde_pct, verdict, "
        "material) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
    auto ci = w.ratio_ci;
    workload.bind(1, id).bind(2, w.workload).bind(3, w.metric);
    workload.bind(4, ci ? std::optional(ci->estimate) : std::nullopt)
        .bind(5, ci ? std::optional(ci->low) : std::nullopt)
        .bind(6, ci ? std::optional(ci->high) : std::nullopt)
        .bind(7, ci ? std::optional(ci->level) : std::nullopt)
        .bind(8, w.mde_pct)
        .bind(9, w.verdict)
        .bind(10, int64_t{w.material});
    workload.run();
  }
  t.commit();
  return {id, false};
}

std::vector<RunRecord> Store::runs(const std::string& experiment) {
  auto s = db_.prepare(fmt::format("SELECT {} FROM runs WHERE ?1 = '' OR experiment = ?1 ORDER BY created_at, id",
                                   kRunColumns));
  s.bind(1, experiment);
  std::vector<RunRecord> out;
  while (s.step()) out.push_back(run_from(s));
  return out;
}

std::optional<RunRecord> Store::run(int64_t id) {
  auto s = db_.prepare(fmt::format("SELECT {} FROM runs WHERE id = ?1", kRunColumns));
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return run_from(s);
}

std::vector<WorkloadRecord> Store::workloads(int64_t run_id) {
  auto s = db_.prepare(
      "SELECT run_id, workload, metric, ratio, ratio_low, ratio_high, level, mde_pct, verdict, material "
      "FROM workloads WHERE run_id = ?1 ORDER BY workload");
  s.bind(1, run_id);
  std::vector<WorkloadRecord> out;
  while (s.step())
    out.push_back({s.integer(0), s.text(1), s.text(2), s.real(3), s.real(4), s.real(5), s.real(6), s.real(7),
                   s.text(8), s.integer(9) != 0});
  return out;
}

std::string Store::integrity_check() {
  auto s = db_.prepare("PRAGMA integrity_check");
  std::string out;
  while (s.step()) out += (out.empty() ? "" : "\n") + s.text(0);
  return out;
}

Store::Added add_bundle_file(Store& store, const fs::path& path) {
  // One read: what is checked is what is stored (thirty-fifth attack: a file swapped between
  // the check and a second read entered the history with an edited verdict).
  std::string text;
  auto validation = pipeline::validate_bundle_file(path, &text);  // UserError when missing
  if (!validation.valid()) {
    std::vector<std::string> problems;
    for (auto& e : validation.schema_errors) problems.push_back(one_line(pipeline::describe(e)));
    for (auto& m : validation.recomputed_mismatches) problems.push_back(one_line(pipeline::describe(m)));
    throw UserError(fmt::format("{} is not a valid bundle ({} problem(s)): {}", path.string(), problems.size(),
                                join(problems, "; ")),
                    "`ksandwich validate " + shell_quote(path.string()) + "` says more; only valid bundles enter the history");
  }
  auto bundle = pipeline::parse_bundle_text(text, path.string());
  // A killed run's bundle has an analysis of the points it ran (thirty-seventh attack: one
  // entered the history as a night).
  if (!bundle.analysis || bundle.analysis->workloads.empty() || evidence::pending_points(bundle) > 0)
    throw UserError(path.string() + " is a run that did not finish (" + std::to_string(evidence::pending_points(bundle)) +
                        " point(s) not run)",
                    "finish it with `ksandwich run --resume DIR`, then add its bundle");
  // The SHA-256 of the bundle's text, however stored: the same run as bundle.json and as
  // bundle.json.gz is one run.
  return store.add(bundle, path, sha256_hex(text));
}

}  // namespace ks::history

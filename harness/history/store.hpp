#pragma once
// The history of nightly runs: one SQLite file, one row per run bundle and one per workload
// of it. Each bundle is added in one transaction, so a crash mid-write leaves the file as it
// was. The schema's version is PRAGMA user_version.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "evidence/bundle.hpp"
#include "history/sqlite.hpp"

namespace ks::history {

inline constexpr int kSchemaVersion = 2;  // 2: runs.clock

struct RunRecord {
  int64_t id = 0;
  std::string experiment;
  std::string created_at;      // when the run started (the bundle's created_at)
  std::string added_at;        // when it entered the history
  std::string backend;
  std::string control_source;  // the git commit of the arm, or its source identity
  std::string patched_source;
  std::string machine_fingerprint;
  std::string machine;         // CPU model, cores
  std::string tool_version;
  std::string tool_revision;
  std::string verdict;
  std::string bundle_path;     // absolute, as added
  std::string bundle_sha256;
  std::string clock;           // machine.clock.name: wall | icount (evidence/clock.hpp); '' unknown
};

struct WorkloadRecord {
  int64_t run_id = 0;
  std::string workload;
  std::string metric;
  std::optional<double> ratio, ratio_low, ratio_high, level;  // patched / control and its interval
  std::optional<double> mde_pct;
  std::string verdict;
  bool material = false;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RunRecord, id, experiment, created_at, added_at, backend, control_source,
                                   patched_source, machine_fingerprint, machine, tool_version, tool_revision,
                                   verdict, bundle_path, bundle_sha256, clock)
void to_json(nlohmann::json& j, const WorkloadRecord& w);

// What an arm was built from: "commit <sha>" for a git source, else the source version with
// its archive's SHA-256 and the patches' SHA-256; the running kernel on the host backend.
std::string source_identity(const evidence::Bundle& b, const std::string& arm);
// A commit, or a version and its patches' hashes: a line. From a bundle someone else wrote
// it can be megabytes, and a trend's text table pads every night to the widest (thirty-sixth
// attack: 60 nights, one kernel release of 4 MiB, 255 MB printed): kept to kMaxIdentity.
constexpr size_t kMaxIdentity = 160;
std::string bounded_identity(const std::string& id);

class Store {
 public:
  // Opens or creates the history (kExisting: only opens one that exists and has its tables, and writes
  // nothing to any other file). Throws UserError when the file is not a SQLite database, is
  // locked by another writer past SQLite's wait, or was written by a newer ksandwich.
  enum class Open { kCreate, kExisting };
  explicit Store(const std::filesystem::path& path, Open open = Open::kCreate);

  struct Added {
    int64_t id = 0;
    bool already = false;  // a bundle of the same text (SHA-256, compressed or not) was in the history: nothing added
  };
  // Records a loaded, validated bundle read from PATH (contents hashing to SHA256), in one
  // transaction. BETWEEN runs after the run row and before the workload rows (tests use it to
  // die or throw mid-write).
  Added add(const evidence::Bundle& bundle, const std::filesystem::path& path, const std::string& sha256,
            const std::function<void()>& between = {});

  std::vector<RunRecord> runs(const std::string& experiment = {});  // oldest first
  std::optional<RunRecord> run(int64_t id);
  std::vector<WorkloadRecord> workloads(int64_t run_id);
  std::string integrity_check();  // "ok" when SQLite finds nothing wrong

 private:
  Database db_;
};

// Reads the bundle at PATH, checks it (schema in SCHEMA_DIR and arithmetic) and adds it.
// Throws UserError (exit 2) naming the problems when it cannot be loaded or is not valid,
// or has no analysis (an unfinished run).
Store::Added add_bundle_file(Store& store, const std::filesystem::path& path);

}  // namespace ks::history

// The history store on a real SQLite file: a real bundle in, the same figures out; a
// writer that throws or is killed mid-transaction leaves the file consistent and unchanged;
// what is not a valid bundle, or not a history, is refused.
#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "history/store.hpp"
#include "pipeline/bundle_file.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"

using namespace ks;
namespace fs = std::filesystem;

namespace {

const fs::path kBundle = fs::path(KS_SOURCE_DIR) / "tests/data/bundles/qemu-confirm.json";

int64_t count(const fs::path& db, const std::string& table) {
  history::Database d(db);
  auto s = d.prepare("SELECT count(*) FROM " + table);
  s.step();
  return s.integer(0);
}

}  // namespace

TEST_CASE("history: a real bundle is recorded with its run and workload figures", "[history]") {
  test::TempDir dir("ks-history");
  auto db = dir.path / "history.sqlite";
  auto bundle = pipeline::load_bundle(kBundle);
  int64_t id = 0;
  {
    history::Store store(db);
    auto added = history::add_bundle_file(store, kBundle);
    CHECK_FALSE(added.already);
    id = added.id;
    auto again = history::add_bundle_file(store, kBundle);  // the same bundle twice
    CHECK(again.already);
    CHECK(again.id == id);
  }
  history::Store store(db);  // reopened
  auto runs = store.runs();
  REQUIRE(runs.size() == 1);
  CHECK(store.runs("default").size() == 1);
  CHECK(store.runs("other").empty());
  auto run = store.run(id);
  REQUIRE(run);
  CHECK(run->experiment == "default");
  CHECK(run->created_at == bundle.created_at);
  CHECK(run->verdict == "INCONCLUSIVE");
  CHECK(run->backend == "qemu");
  CHECK(run->tool_version == "0.1.0");
  CHECK(run->bundle_sha256 == sha256_file(kBundle));
  CHECK(run->bundle_path == fs::absolute(kBundle).lexically_normal().string());
  CHECK(run->machine_fingerprint.size() == 16);
  CHECK(run->control_source.rfind("6.1.192 (sha256 cacdc3830989)", 0) == 0);
  CHECK(run->patched_source == "6.1.192 (sha256 cacdc3830989) + patch 47fc23920d31");
  auto workloads = store.workloads(id);
  REQUIRE(workloads.size() == bundle.analysis->workloads.size());
  for (auto& w : bundle.analysis->workloads) {
    auto it = std::find_if(workloads.begin(), workloads.end(), [&](auto& r) { return r.workload == w.workload; });
    REQUIRE(it != workloads.end());
    CHECK(it->verdict == w.verdict);
    REQUIRE(it->ratio);
    CHECK(*it->ratio == w.ratio_ci->estimate);
    CHECK(*it->ratio_low == w.ratio_ci->low);
    CHECK(*it->ratio_high == w.ratio_ci->high);
    CHECK(*it->mde_pct == *w.mde_pct);
  }
  CHECK(store.integrity_check() == "ok");
  history::Database raw(db);
  auto version = raw.prepare("PRAGMA user_version");
  version.step();
  CHECK(version.integer(0) == history::kSchemaVersion);
}

TEST_CASE("history: an arm at a later commit is recorded as that commit, its diff not as a patch", "[history]") {
  auto bundle = pipeline::load_bundle(kBundle);
  auto& control = bundle.builds["control"];
  control["source"] = {{"kind", "git"}, {"commit", "aaaa1111"}, {"version", "6.1.192"}};
  auto& patched = bundle.builds["patched"];
  patched["source"] = control["source"];
  patched["commit"] = {{"name", "master"}, {"sha", "bbbb2222"}, {"file", "git diff aaaa1111..bbbb2222"}};
  patched["patches"] = {{{"file", "git diff aaaa1111..bbbb2222"}, {"sha256", "1111111111111111"}},
                        {{"file", "mine.patch"}, {"sha256", "2222222222222222"}}};
  CHECK(history::source_identity(bundle, "control") == "commit aaaa1111");
  CHECK(history::source_identity(bundle, "patched") == "commit bbbb2222 + patch 222222222222");
  // Thirty-sixth attack: a commit of 4 MiB, or 100,000 patches, in a bundle someone else wrote
  // made every night of a trend's text table that wide.
  control["source"]["commit"] = std::string(4 << 20, 'a');
  CHECK(history::source_identity(bundle, "control").size() == history::kMaxIdentity);
  patched["patches"] = nlohmann::json::array();
  for (int i = 0; i < 100000; ++i) patched["patches"].push_back({{"file", "p"}, {"sha256", "3333333333333333"}});
  CHECK(history::source_identity(bundle, "patched").size() == history::kMaxIdentity);
  bundle.builds.erase("control");
  bundle.machine["kernel_release"] = std::string(1000, 'r');
  CHECK(history::source_identity(bundle, "control").size() == history::kMaxIdentity);
}

TEST_CASE("history: a writer that throws between statements leaves nothing behind", "[history]") {
  test::TempDir dir("ks-history");
  auto db = dir.path / "history.sqlite";
  auto bundle = pipeline::load_bundle(kBundle);
  {
    history::Store store(db);
    CHECK_THROWS_AS(store.add(bundle, kBundle, "sha-1", [] { throw std::runtime_error("power cut"); }),
                    std::runtime_error);
    CHECK(store.runs().empty());
  }
  CHECK(count(db, "runs") == 0);
  CHECK(count(db, "workloads") == 0);
  history::Store store(db);
  CHECK(store.integrity_check() == "ok");
  auto added = store.add(bundle, kBundle, "sha-1");  // the same add, uninterrupted, works
  CHECK(store.workloads(added.id).size() == 3);
}

TEST_CASE("history: one run is one night, whatever the file's bytes (seventy-first attack)", "[history]") {
  test::TempDir dir("ks-history");
  history::Store store(dir.path / "history.sqlite");
  auto bundle = pipeline::load_bundle(kBundle);
  auto first = store.add(bundle, kBundle, "sha-of-the-file");
  CHECK(store.add(bundle, kBundle, "sha-of-the-file").already);  // the same file: the run it is
  CHECK_THROWS_WITH(store.add(bundle, kBundle, "sha-of-a-copy-reindented"),
                    Catch::Contains("this history holds run " + std::to_string(first.id) + " already"));
  auto next = bundle;
  next.created_at = "2026-12-01T14:26:00Z";
  CHECK_FALSE(store.add(next, kBundle, "sha-of-the-next-night").already);
  CHECK(store.runs().size() == 2);
}

TEST_CASE("history: a writer killed mid-transaction leaves the file consistent", "[history]") {
  test::TempDir dir("ks-history");
  auto db = dir.path / "history.sqlite";
  auto bundle = pipeline::load_bundle(kBundle);
  {
    history::Store store(db);
    store.add(bundle, kBundle, "night-1");  // one committed night before the crash
  }
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // the writer: dies by SIGKILL after the run row, before its workloads
    history::Store store(db);
    auto next_night = bundle;
    next_night.created_at = "2026-12-01T14:26:00Z";
    store.add(next_night, kBundle, "night-2", [] { raise(SIGKILL); });
    _exit(0);  // not reached
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  CHECK(fs::exists(dir.path / "history.sqlite-journal"));  // the rollback journal it left
  history::Store store(db);  // opening replays the journal
  CHECK(store.integrity_check() == "ok");
  auto runs = store.runs();
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].bundle_sha256 == "night-1");
  CHECK(count(db, "workloads") == 3);
}

TEST_CASE("history: what is not a valid bundle, or not a history, is refused", "[history]") {
  test::TempDir dir("ks-history");
  auto db = dir.path / "history.sqlite";
  history::Store store(db);
  auto garbage = dir.path / "garbage.json";
  write_file_atomic(garbage, "{\"not\": \"a bundle\"");
  CHECK_THROWS_AS(history::add_bundle_file(store, garbage), UserError);
  CHECK_THROWS_AS(history::add_bundle_file(store, dir.path / "missing.json"), UserError);
  // A real bundle with one row changed after it was written: its arithmetic no longer adds up.
  auto j = nlohmann::json::parse(read_file(kBundle));
  j["rows"][5]["ns_per_op"] = j["rows"][5]["ns_per_op"].get<double>() * 3;
  auto tampered = dir.path / "tampered.json";
  write_file_atomic(tampered, j.dump());
  CHECK_THROWS_AS(history::add_bundle_file(store, tampered), UserError);
  CHECK(store.runs().empty());

  auto text = dir.path / "notes.txt";
  write_file_atomic(text, std::string(4096, 'x'));
  CHECK_THROWS_AS(history::Store(text), UserError);
  {
    history::Database other(dir.path / "other.sqlite");
    other.exec("CREATE TABLE t (x)");
  }
  CHECK_THROWS_AS(history::Store(dir.path / "other.sqlite"), UserError);
  {
    history::Database newer(dir.path / "newer.sqlite");
    newer.exec("PRAGMA user_version = 99");
  }
  CHECK_THROWS_AS(history::Store(dir.path / "newer.sqlite"), UserError);
  {
    history::Database negative(dir.path / "negative.sqlite");
    negative.exec("PRAGMA user_version = -5");
  }
  CHECK_THROWS_WITH(history::Store(dir.path / "negative.sqlite"), Catch::Contains("schema version -5"));
  {
    history::Database unmigratable(dir.path / "clock-already.sqlite");  // pass 52: SQLite's own words, no hint
    unmigratable.exec("CREATE TABLE runs (id INTEGER PRIMARY KEY, clock TEXT)");
    unmigratable.exec("CREATE TABLE workloads (run_id INTEGER)");
    unmigratable.exec("PRAGMA user_version = 1");
  }
  CHECK_THROWS_WITH(history::Store(dir.path / "clock-already.sqlite"), Catch::Contains("its schema is not the one ksandwich makes"));
}

TEST_CASE("history: one experiment, one clock, and a history from before clocks takes each run's from its bundle",
          "[history]") {
  test::TempDir dir("ks-history");
  auto db = dir.path / "history.sqlite";
  auto wall = pipeline::load_bundle(kBundle);  // written before clocks were recorded: wall time
  auto icount = wall;
  icount.machine["clock"] = {{"name", "icount"}};
  icount.experiment_name = "default-icount";
  auto icount_file = dir.path / "icount.json";
  auto icount_json = nlohmann::json::parse(read_file(kBundle));
  icount_json["machine"]["clock"] = {{"name", "icount"}};
  write_file_atomic(icount_file, icount_json.dump());
  auto gone_file = dir.path / "gone.json";
  {
    history::Store store(db);
    store.add(wall, kBundle, "night-1");
    store.add(icount, icount_file, "night-2");
    auto other_clock = wall;
    other_clock.experiment_name = "default-icount";
    try {
      store.add(other_clock, kBundle, "night-3");
      FAIL("a night on another clock was added");
    } catch (const UserError& e) {
      CHECK_THAT(e.what(), Catch::Contains("measured with the icount clock") && Catch::Contains("this bundle with wall"));
      CHECK_THAT(e.hint(), Catch::Contains("another --history"));
    }
    CHECK(store.runs("default")[0].clock == "wall");
    CHECK(store.runs("default-icount")[0].clock == "icount");
    auto gone = wall;
    gone.experiment_name = "gone";
    write_file_atomic(gone_file, read_file(kBundle));
    store.add(gone, gone_file, "night-4");
  }
  fs::remove(gone_file);
  {
    // Version 1 of the schema: the same tables without runs.clock.
    history::Database raw(db);
    raw.exec("ALTER TABLE runs DROP COLUMN clock");
    raw.exec("PRAGMA user_version = 1");
  }
  history::Store store(db);  // migrated on open, each run's clock read from its bundle
  CHECK(store.runs("default")[0].clock == "wall");
  CHECK(store.runs("default-icount")[0].clock == "icount");
  CHECK(store.runs("gone")[0].clock == "");  // its bundle is gone: unknown, and never compared
  auto icount_again = icount;  // the next night
  icount_again.created_at = "2026-12-01T14:26:00Z";
  CHECK_FALSE(store.add(icount_again, icount_file, "night-5").already);
  auto gone_icount = icount_again;
  gone_icount.experiment_name = "gone";
  CHECK_NOTHROW(store.add(gone_icount, icount_file, "night-6"));
  CHECK(store.integrity_check() == "ok");
  history::Database raw(db);
  auto version = raw.prepare("PRAGMA user_version");
  version.step();
  CHECK(version.integer(0) == history::kSchemaVersion);
  // A clock the file names that no ksandwich measures with (fifty-fifth attack: exit 70).
  raw.exec("UPDATE runs SET clock = 'bogus' WHERE experiment = 'default'");
  auto later = wall;
  CHECK_THROWS_WITH(store.add(later, kBundle, "night-7"), Catch::Contains("the bogus clock (a clock this ksandwich does not know)"));
}

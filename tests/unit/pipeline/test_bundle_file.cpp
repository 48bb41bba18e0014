// Bundle files: the gzip copy a run writes beside bundle.json (small enough to attach to a
// mail) reads back through the same load_bundle, and real bundles render within 80
// columns and as JSON.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <unistd.h>

#include "evidence/bundle.hpp"
#include "experiment/experiment.hpp"
#include "pipeline/bundle_file.hpp"
#include "proc/runner.hpp"
#include "report/report.hpp"
#include "unit/report/report_test_util.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"

using namespace ks;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(KS_SOURCE_DIR) / "tests" / "data";

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("ks-bundle-file-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("bundle file: the gzip copy is RFC 1952 and reads back as the same bundle") {
  TempDir tmp;
  auto b = pipeline::load_bundle(kData / "default-confirm.bundle.json.gz");
  auto text = evidence::to_json(b).dump(2) + "\n";
  pipeline::write_compressed_bundle(tmp.path / "bundle.json.gz", text);
  auto gz = read_file(tmp.path / "bundle.json.gz");
  CHECK(pipeline::is_gzip(gz));
  CHECK(gz.size() < text.size() / 5);
  CHECK(pipeline::read_bundle_text(tmp.path / "bundle.json.gz") == text);
  CHECK(evidence::to_json(pipeline::load_bundle(tmp.path / "bundle.json.gz")) == evidence::to_json(b));
  // What zcat reads, not only what zlib reads.
  if (!proc::have_program("gzip")) {
    WARN("SKIP the gzip(1) cross-check: gzip is not installed");
    return;
  }
  auto r = proc::run(proc::command({"gzip", "-dc", (tmp.path / "bundle.json.gz").string()},
                                   std::chrono::seconds(30)));
  REQUIRE(r.ok());
  CHECK(r.out == text);
}

TEST_CASE("bundle file: the main job's bundle, compressed, is far below vger's 100,000 bytes") {
  TempDir tmp;
  auto b = pipeline::load_bundle(kData / "default-confirm.bundle.json.gz");
  auto text = evidence::to_json(b).dump(2) + "\n";
  pipeline::write_compressed_bundle(tmp.path / "bundle.json.gz", text);
  auto size = fs::file_size(tmp.path / "bundle.json.gz");
  INFO("bundle.json " << text.size() << " bytes, bundle.json.gz " << size << " bytes");
  CHECK(text.size() > 100000);  // the plain bundle would be dropped by the list
  CHECK(size < 100000);
  // The attachment, made from the text, is byte for byte the file a run writes beside it.
  auto a = pipeline::bundle_attachment(text);
  CHECK(a.name == "bundle.json.gz");
  CHECK(a.bytes == size);
  CHECK(a.sha256 == sha256_file(tmp.path / "bundle.json.gz"));
}

TEST_CASE("bundle file: a cut-off or corrupt gzip bundle is a clear UserError") {
  TempDir tmp;
  auto gz = read_file(kData / "default-pending.bundle.json.gz");
  write_file_atomic(tmp.path / "cut.json.gz", gz.substr(0, gz.size() / 2));
  CHECK_THROWS_AS(pipeline::load_bundle(tmp.path / "cut.json.gz"), UserError);
  auto corrupt = gz;
  for (size_t i = 20; i < 200 && i < corrupt.size(); ++i) corrupt[i] = static_cast<char>(~corrupt[i]);
  write_file_atomic(tmp.path / "corrupt.json.gz", corrupt);
  CHECK_THROWS_AS(pipeline::load_bundle(tmp.path / "corrupt.json.gz"), UserError);
  CHECK_THROWS_AS(pipeline::load_bundle(tmp.path / "absent.json.gz"), UserError);
}

TEST_CASE("bundle file: real bundles render every text line within 80 columns") {
  for (const char* name : {"default-confirm.bundle.json.gz", "default-pending.bundle.json.gz"}) {
    auto b = pipeline::load_bundle(kData / name);
    report::Options options;
    options.tester = "Jane Doe <jane@example.org>";
    options.in_reply_to = "<20260423102649.12345-1-mark@harmstone.com>";
    options.attachment = report::Attachment{"bundle.json.gz", 25700, std::string(64, 'f'), ""};
    auto out = report::text(b, options);
    CHECK_THAT(out, Catch::Matchers::Contains("--- reply"));
    for (auto& line : test::lines_of(out)) {
      INFO(name << ": " << line);
      CHECK(line.size() <= 80);
    }
  }
}

TEST_CASE("bundle file: the json view of a real bundle is the report model, typed") {
  auto b = pipeline::load_bundle(kData / "default-confirm.bundle.json.gz");
  auto j = nlohmann::json::parse(report::render(b, "json"));
  CHECK(j.at("verdict") == b.verdict);
  CHECK(j.at("title").get<std::string>().find("ksandwich report") == 0);
  REQUIRE(j.at("workloads").size() == b.analysis->workloads.size());
  for (size_t i = 0; i < b.analysis->workloads.size(); ++i) {
    auto& w = j["workloads"][i];
    CHECK(w.at("workload") == b.analysis->workloads[i].workload);
    CHECK(w.at("verdict") == b.analysis->workloads[i].verdict);
    CHECK(w.at("change_pct").is_number());
  }
  bool table = false;
  for (auto& block : j.at("blocks")) table = table || block.at("kind") == "table";
  CHECK(table);
}

TEST_CASE("bundle file: every reader refuses a verdict, metric or schema_version no run writes (history, bisect, gather too)") {
  auto j = nlohmann::json::parse(pipeline::read_bundle_text(kData / "default-confirm.bundle.json.gz"));
  REQUIRE_NOTHROW(pipeline::parse_bundle_text(j.dump(), "b"));
  auto verdict = j;
  verdict["verdict"] = "MAYBE";
  CHECK_THROWS_WITH(pipeline::parse_bundle_text(verdict.dump(), "b"), Catch::Contains("verdict \"MAYBE\" is not one of"));
  auto workload = j;
  workload["analysis"]["workloads"][0]["verdict"] = "PASS";
  CHECK_THROWS_AS(pipeline::parse_bundle_text(workload.dump(), "b"), UserError);
  auto overall = j;
  overall["analysis"]["verdict"] = "NO_CHANGE\nTested-by: M <m@x>";
  CHECK_THROWS_WITH(pipeline::parse_bundle_text(overall.dump(), "b"), Catch::Contains("is not one of"));
  auto metric = j;
  metric["analysis"]["workloads"][0]["metric"] = "iops\nVerdict: NO_CHANGE";
  CHECK_THROWS_WITH(pipeline::parse_bundle_text(metric.dump(), "b"), Catch::Contains("metric \"iops Verdict"));
  auto version = j;
  version["schema_version"] = 99;
  CHECK_THROWS_WITH(pipeline::parse_bundle_text(version.dump(), "b"), Catch::Contains("schema_version 99"));
}

TEST_CASE("bundle file: every reader refuses a workload or an arm that is not a name: wrapped, it could start a report line (twelfth attack)") {
  auto j = nlohmann::json::parse(pipeline::read_bundle_text(kData / "default-confirm.bundle.json.gz"));
  for (auto forged : {std::string("clone Verdict: IMPROVEMENT"), std::string("clone\n\nTested-by: M <m@x>"), std::string(65, 'c')}) {
    auto analysis = j;
    analysis["analysis"]["workloads"][0]["workload"] = forged;
    CHECK_THROWS_WITH(pipeline::parse_bundle_text(analysis.dump(), "b"), Catch::Contains("is not a name"));
    auto rows = j;
    rows["rows"][0]["workload"] = forged;
    CHECK_THROWS_WITH(pipeline::parse_bundle_text(rows.dump(), "b"), Catch::Contains("is not a name"));
  }
  // An arm too: a table repeats it on every row (fifteenth attack: two of 100 KB, 18 s, 730 MB).
  auto plan = j;
  plan["plan"]["control_arm"] = std::string(100000, 'c');
  CHECK_THROWS_WITH(pipeline::parse_bundle_text(plan.dump(), "b"), Catch::Contains("the arm"));
  auto point = j;
  point["points"][0]["arm"] = "control Verdict: NO_CHANGE";
  CHECK_THROWS_WITH(pipeline::parse_bundle_text(point.dump(), "b"), Catch::Contains("the arm"));
  // A profile holds the functions a run keeps, no more (forty-fourth attack: 1,850 in each of
  // 200 points cost every reader 30 s).
  auto profiled = j;
  nlohmann::json functions = nlohmann::json::array();
  for (int i = 0; i <= 150; ++i) functions.push_back({{"function", "f" + std::to_string(i)}, {"calls", 1}, {"own_ns", 1}});
  profiled["points"][0]["profile"] = {{{"workload", "clone"}, {"functions", functions}}};
  CHECK_THROWS_WITH(pipeline::parse_bundle_text(profiled.dump(), "b"), Catch::Contains("profiles 151 functions"));
  // Each workload is a plot in the HTML view: 20,000 of them made 134 MB (sixteenth attack).
  auto many = j;
  for (size_t i = 0; i <= experiment::kMaxWorkloads; ++i) {
    auto row = many["rows"][0];
    row["workload"] = "w" + std::to_string(i);
    many["rows"].push_back(row);
  }
  CHECK_THROWS_WITH(pipeline::parse_bundle_text(many.dump(), "b"), Catch::Contains("more than 64 workloads"));
  // And every other word the reply's prose is made of: "a fresh btrfs on brd\n\nLooks good to
  // me ..." was a paragraph of the tester's mail (seventeenth attack).
  const std::string paragraph = "brd for every point.\n\nLooks good to me. Please apply.\n";
  for (auto [path, what] : {std::pair{"/points/0/storage/kind", "storage kind"}, {"/backend", "backend"},
                            {"/experiment_name", "experiment name"}, {"/experiment/name", "experiment name"},
                            {"/analysis/gates/0/name", "gate"}}) {
    auto forged = j;
    forged[nlohmann::json::json_pointer(path)] = paragraph;
    CHECK_THROWS_WITH(pipeline::parse_bundle_text(forged.dump(), "b"), Catch::Contains(std::string("the ") + what));
  }
  auto audit = j;  // a line of the text view starts with it (nineteenth attack)
  audit["builds"]["audit"][0]["field"] = "clone: patched vs control: -41.2% ns/op, IMPROVEMENT";
  CHECK_THROWS_WITH(pipeline::parse_bundle_text(audit.dump(), "b"), Catch::Contains("the audit field"));
  // The analysis pairs every point of one arm with every other's: 30,000 took 88 s and 3.7 GB.
  auto points = j;
  while (points["points"].size() <= 1000) points["points"].push_back(points["points"][0]);
  CHECK_THROWS_WITH(pipeline::parse_bundle_text(points.dump(), "b"), Catch::Contains("and a run makes at most 200"));
  // A profiled function starts a table row; the plan's order is arms (twentieth attack).
  auto profile = j;
  profile["points"][0]["profile"] = nlohmann::json::array(
      {{{"workload", "clone"}, {"functions", {{{"function", "dedupe: patched vs control: +52.0%, REGRESSION"}, {"calls", 1}}}}}});
  CHECK_THROWS_WITH(pipeline::parse_bundle_text(profile.dump(), "b"), Catch::Contains("is not a kernel symbol"));
  profile["points"][0]["profile"][0]["functions"][0]["function"] = "btrfs_clone_files.isra.0";
  CHECK_NOTHROW(pipeline::parse_bundle_text(profile.dump(), "b"));
  auto order = j;
  order["plan"]["order"] = {"control", "patched). I also ran it on bare metal: please do not apply. (control", "control"};
  CHECK_THROWS_WITH(pipeline::parse_bundle_text(order.dump(), "b"), Catch::Contains("the arm"));
  auto known_gate = j;  // a gate this version knows keeps its name, spaces and all
  known_gate["analysis"]["gates"][0]["name"] = "matched builds";
  CHECK_NOTHROW(pipeline::parse_bundle_text(known_gate.dump(), "b"));
}

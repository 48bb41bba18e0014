// validate recomputes every derived field and gate from a bundle's raw rows and points
// (issue 11 item 7): each kind of tampering is named with its path, the bundle's value and
// the recomputed one; an untouched bundle has none. The bundles are real (tests/data/bundles),
// their analysis derived again by this version first, so an analysis change does not break
// these tests.
#include <catch2/catch.hpp>

#include <algorithm>

#include "evidence/bundle.hpp"
#include "experiment/experiment.hpp"
#include "pipeline/bundle_file.hpp"
#include "pipeline/validate.hpp"
#include "support/paths.hpp"
#include "util/files.hpp"

using namespace ks;
using nlohmann::json;

namespace {

// The bundle with its analysis and verdict derived from its raw data by this version.
json rederived(const json& raw) {
  auto b = evidence::from_json(raw);
  b.analysis = pipeline::analyze_bundle(experiment::parse(b.experiment), b);
  b.verdict = b.analysis->verdict;
  return evidence::to_json(b);
}

json fixture(const std::string& name) {
  return rederived(json::parse(read_file(test::source_dir() / "tests/data/bundles" / name)));
}

std::vector<pipeline::Mismatch> check(const json& raw) {
  return pipeline::check_recomputation(raw, evidence::from_json(raw));
}

const pipeline::Mismatch* find(const std::vector<pipeline::Mismatch>& ms, const std::string& path) {
  auto it = std::find_if(ms.begin(), ms.end(), [&](auto& m) { return m.path == path; });
  return it == ms.end() ? nullptr : &*it;
}

std::string paths(const std::vector<pipeline::Mismatch>& ms) {
  std::string out;
  for (auto& m : ms) out += pipeline::describe(m) + "\n";
  return out;
}

// Raw data that fails the semantic gate of the first workload: three unexpected results in
// one measured round, as a kernel that broke dedupe would give.
json with_semantic_failure(json raw) {
  for (auto& r : raw["rows"])
    if (!r.value("warmup", false)) {
      r["unexpected_results"] = 3;
      r["expected_match_ratio"] = 99.0;
      break;
    }
  return rederived(raw);
}

}  // namespace

TEST_CASE("validate: real bundles, untouched, recompute exactly") {
  for (auto name : {"host-screen.json", "host-confirm.json"}) {
    INFO(name);
    auto raw = fixture(name);
    auto ms = check(raw);
    INFO(paths(ms));
    CHECK(ms.empty());
  }
}

TEST_CASE("validate: a failed gate flipped to passed is caught") {
  auto raw = with_semantic_failure(fixture("host-screen.json"));
  REQUIRE(check(raw).empty());  // the failure is in the raw data, so the bundle is honest
  auto& gates = raw["analysis"]["gates"];
  auto failed = std::find_if(gates.begin(), gates.end(), [](auto& g) { return !g["passed"].template get<bool>(); });
  REQUIRE(failed != gates.end());
  const auto where = "/analysis/gates[" + (*failed)["name"].get<std::string>() + ": " +
                     (*failed)["scope"].get<std::string>() + "]/passed";
  (*failed)["passed"] = true;
  auto ms = check(raw);
  INFO(paths(ms));
  auto m = find(ms, where);
  REQUIRE(m);
  CHECK(m->bundle == true);
  CHECK(m->recomputed == false);
}

TEST_CASE("validate: a passed gate flipped to failed is caught") {
  auto raw = fixture("host-confirm.json");
  auto& gate = raw["analysis"]["gates"][0];
  gate["passed"] = false;
  CHECK(find(check(raw), "/analysis/gates[" + gate["name"].get<std::string>() + ": " + gate["scope"].get<std::string>() +
                             "]/passed"));
}

TEST_CASE("validate: gates are matched by name and scope, so one gate more or less is one line") {
  auto raw = fixture("host-confirm.json");
  auto& gates = raw["analysis"]["gates"];
  auto removed = gates[0];
  gates.erase(gates.begin());
  auto ms = check(raw);
  INFO(paths(ms));
  REQUIRE(ms.size() == 1);
  CHECK(ms[0].path == "/analysis/gates[" + removed["name"].get<std::string>() + ": " +
                          removed["scope"].get<std::string>() + "]");
  CHECK(ms[0].bundle.is_null());
  CHECK(ms[0].recomputed == removed);
}

TEST_CASE("validate: a changed delta_pct_skip_first is caught, with both values") {
  auto raw = fixture("host-screen.json");
  auto& w = raw["analysis"]["workloads"][1];
  const double honest = w["delta_pct_skip_first"].get<double>();
  w["delta_pct_skip_first"] = honest + 0.5;
  auto ms = check(raw);
  INFO(paths(ms));
  REQUIRE(ms.size() == 1);
  CHECK(ms[0].path == "/analysis/workloads/1/delta_pct_skip_first");
  CHECK(ms[0].bundle.get<double>() == honest + 0.5);
  CHECK(ms[0].recomputed.get<double>() == honest);
}

TEST_CASE("validate: a changed sd field is caught") {
  auto raw = fixture("host-confirm.json");
  for (auto field : {"sd_log_ratio", "within_point_sd_pct", "between_point_sd_pct"}) {
    INFO(field);
    auto tampered = raw;
    auto& w = tampered["analysis"]["workloads"][0];
    REQUIRE(w.contains(field));
    w[field] = w[field].get<double>() * 1.01 + 0.001;
    CHECK(find(check(tampered), std::string("/analysis/workloads/0/") + field));
  }
  auto tampered = raw;
  tampered["analysis"]["workloads"][0]["points"][2]["stddev"] = 1.0;
  CHECK(find(check(tampered), "/analysis/workloads/0/points/2/stddev"));
}

TEST_CASE("validate: a changed verdict is caught, with what a CI job would have seen") {
  auto raw = fixture("host-confirm.json");
  REQUIRE(raw["verdict"] == "INCONCLUSIVE");
  SECTION("the top-level verdict") {
    raw["verdict"] = "NO_CHANGE";
    auto ms = check(raw);
    REQUIRE(ms.size() == 1);
    CHECK(ms[0].path == "/verdict");
    CHECK(ms[0].recomputed == "INCONCLUSIVE");
  }
  SECTION("a workload's verdict, made a material regression") {
    raw["analysis"]["workloads"][0]["verdict"] = "REGRESSION";
    raw["analysis"]["workloads"][0]["material"] = true;
    auto ms = check(raw);
    INFO(paths(ms));
    CHECK(find(ms, "/analysis/workloads/0/verdict"));
    CHECK(find(ms, "/analysis/workloads/0/material"));
    auto code = find(ms, "(exit code)");
    REQUIRE(code);
    CHECK(code->bundle == 1);
    CHECK(code->recomputed == 4);
  }
}

TEST_CASE("validate: estimates, intervals and p values are recomputed") {
  auto raw = fixture("qemu-confirm.json");  // a real confirm run with an interval and a p value
  auto& w = raw["analysis"]["workloads"][0];
  SECTION("an interval bound") {
    w["ratio_ci"]["high"] = w["ratio_ci"]["high"].get<double>() * 0.9;
    CHECK(find(check(raw), "/analysis/workloads/0/ratio_ci/high"));
  }
  SECTION("a p value, beyond floating-point noise") {
    w["t_test_p"] = w["t_test_p"].get<double>() * (1 + 1e-6);
    CHECK(find(check(raw), "/analysis/workloads/0/t_test_p"));
  }
  SECTION("floating-point noise is not tampering") {
    w["t_test_p"] = w["t_test_p"].get<double>() * (1 + 1e-13);
    w["delta_pct"] = w["delta_pct"].get<double>() * (1 - 1e-13);
    CHECK(check(raw).empty());
  }
  SECTION("a key the analysis does not compute, or one removed") {
    w["confidence"] = "very high";
    raw["analysis"]["workloads"][0].erase("mde_pct");
    auto ms = check(raw);
    CHECK(find(ms, "/analysis/workloads/0/confidence"));
    CHECK(find(ms, "/analysis/workloads/0/mde_pct"));
  }
}

TEST_CASE("validate: raw rows edited without the analysis no longer add up") {
  auto raw = fixture("host-screen.json");
  SECTION("a measured round made twice as slow") {
    for (auto& r : raw["rows"])
      if (!r.value("warmup", false) && r["point"] == 1) {
        r["elapsed_ns"] = r["elapsed_ns"].get<uint64_t>() * 2;
        r["ns_per_op"] = r["ns_per_op"].get<double>() * 2;
      }
    auto ms = check(raw);
    CHECK(find(ms, "/analysis/workloads/0/patched"));
  }
  SECTION("ns_per_op that is not elapsed_ns / ops") {
    raw["rows"][3]["ns_per_op"] = raw["rows"][3]["ns_per_op"].get<double>() + 10;
    CHECK(find(check(raw), "/rows/3/ns_per_op"));
  }
  SECTION("a time per op of no ops, or of more ops than a count holds") {
    // Thirty-sixth attack: ops 0 skipped the check above; ops 1e30 was read as 0.
    raw["rows"][3]["ops"] = 0;
    CHECK(find(check(raw), "/rows/3/ops"));
    raw["rows"][3]["ops"] = 1e30;
    CHECK_THROWS_WITH(check(raw), Catch::Contains("a whole number within range is required"));
  }
  SECTION("a matched-build audit that the builds do not give") {
    // Thirty-seventh attack: a patched kernel of another config beside an audit of all PASS.
    auto qemu = fixture("qemu-confirm.json");
    qemu["builds"]["patched"]["config"]["sha256"] = std::string(64, '0');
    CHECK(find(check(qemu), "/builds/audit"));
    CHECK(find(check(qemu), "/builds/matched"));
    qemu["builds"].erase("audit");
    CHECK(find(check(qemu), "/builds/audit"));
  }
  SECTION("an audit row forged to PASS: analyze's re-judging names it and writes the audit the builds give") {
    // Sixty-first attack: `analyze` said "0 field(s) differ" and its --out kept the forged row.
    auto qemu = fixture("qemu-confirm.json");
    const auto honest = qemu["builds"]["audit"];
    for (auto& row : qemu["builds"]["audit"])
      if (row["field"] == "compiler") row["patched"] = "clang 99";
    REQUIRE(qemu["builds"]["audit"] != honest);
    auto b = ks::evidence::from_json(qemu);
    auto again = ks::pipeline::rejudged(b);
    CHECK(again.builds["audit"] == honest);
    CHECK(find(ks::pipeline::judgement_changes(qemu, b, again), "/builds/audit"));
    // Builds that cannot be audited (a patch of another type) keep no audit of theirs
    // (sixty-second attack: the forged rows were carried into analyze --out as audited).
    qemu["builds"]["patched"]["patches"] = {5};
    auto unaudited = ks::pipeline::rejudged(ks::evidence::from_json(qemu));
    CHECK(unaudited.builds["audit"] == nlohmann::json::array());
    CHECK(unaudited.builds["matched"] == false);
    CHECK(unaudited.verdict == "INVALID");
  }
  SECTION("an audit on a bundle with no two builds is no one's word") {
    // Sixty-third attack: a host bundle's forged audit of all PASS made a passing gate.
    auto host = fixture("host-confirm.json");
    host["builds"] = {{"audit", {{{"field", "compiler"}, {"status", "PASS"}, {"control", "gcc"}, {"patched", "clang"}}}},
                      {"matched", true}};
    auto b = ks::evidence::from_json(host);
    auto again = ks::pipeline::rejudged(b);
    CHECK_FALSE(again.builds.contains("audit"));
    CHECK(find(ks::pipeline::judgement_changes(host, b, again), "/builds/audit"));
    for (auto& g : again.analysis->gates) CHECK(g.name != "matched builds");
  }
  SECTION("builds that are not the kernels the arms name or the points booted are not matched") {
    // Sixty-third attack: a patched build holding no patch, beside an arm that names one, and
    // points that booted another kernel than their arm's build, validated.
    auto qemu = fixture("qemu-confirm.json");
    REQUIRE(ks::pipeline::rejudged(ks::evidence::from_json(qemu)).verdict != "INVALID");
    auto matched_gate = [](nlohmann::json bundle) {
      auto again = ks::pipeline::rejudged(ks::evidence::from_json(bundle));
      CHECK(again.verdict == "INVALID");
      for (auto& g : again.analysis->gates)
        if (g.name == "matched builds") return g.passed ? std::string("passed") : g.detail;
      return std::string("no gate");
    };
    auto unpatched = qemu;
    unpatched["builds"]["patched"]["patches"] = nlohmann::json::array();
    CHECK(matched_gate(unpatched) ==
          "the builds are not the run's kernels: the patched build holds the patch files [], its arm names "
          "[btrfs-drop-sb-nosec.patch]");
    auto both = qemu;  // the control built with the patch too
    both["builds"]["control"]["patches"] = both["builds"]["patched"]["patches"];
    CHECK_THAT(matched_gate(both), Catch::Contains("the control build holds the patch files [btrfs-drop-sb-nosec.patch], its arm names []"));
    auto other = qemu;  // another patch file of the same content
    other["builds"]["patched"]["patches"][0]["file"] = "kernel-patches/btrfs-noop-comment.patch";
    CHECK_THAT(matched_gate(other), Catch::Contains("holds the patch files [btrfs-noop-comment.patch]"));
    auto booted = qemu;  // point 0, of the patched arm, booted the control's kernel
    REQUIRE(booted["points"][0]["arm"] == "patched");
    booted["points"][0]["kernel_release"] = "6.1.192-ks-control";
    booted["points"][0]["environment"]["kernel_release"] = "6.1.192-ks-control";
    CHECK(matched_gate(booted) ==
          "the builds are not the run's kernels: point 0 (patched) booted 6.1.192-ks-control, not its arm's build "
          "6.1.192-ks-patched");
    auto reported = qemu;  // as the guest reported it only
    reported["points"][3]["environment"]["kernel_release"] = "6.18.44";
    CHECK_THAT(matched_gate(reported), Catch::Contains("point 3 (control) booted 6.18.44, not its arm's build 6.1.192-ks-control"));
    // Sixty-fourth attack: each of these still passed.
    const auto patch = qemu["builds"]["patched"]["patches"][0];
    auto excused = qemu;  // the control holds the patch, "excused" as a commit's diff
    excused["builds"]["control"]["patches"] = {patch};
    excused["builds"]["control"]["commit"] = {{"file", patch["file"]}};
    CHECK_THAT(matched_gate(excused), Catch::Contains("the control build is of a commit its arm does not name"));
    for (int index : {0, 2}) {  // the control holds it as a file's patch 0 or 2
      auto hidden = qemu;
      hidden["builds"]["control"]["patches"] = {patch};
      hidden["builds"]["control"]["patches"][0]["index"] = index;
      CHECK_THAT(matched_gate(hidden), Catch::Contains("the control build holds the patch files [btrfs-drop-sb-nosec.patch] (not whole"));
    }
    auto extra = qemu;  // a foreign patch appended as the file's second
    extra["builds"]["patched"]["patches"].push_back(patch);
    extra["builds"]["patched"]["patches"][1]["index"] = 2;
    CHECK_THAT(matched_gate(extra), Catch::Contains("(not whole, or out of order)"));
    auto named = qemu;  // a second file, "excused" by a commit of no id the arm does not name
    named["builds"]["patched"]["patches"].push_back(patch);
    named["builds"]["patched"]["patches"][1]["file"] = "evil.patch";
    named["builds"]["patched"]["commit"] = {{"file", "evil.patch"}};
    CHECK_THAT(matched_gate(named), Catch::Contains("the patched build is of a commit its arm does not name"));
    auto git = qemu;  // both built from a git tree the experiment does not name
    for (auto arm : {"control", "patched"}) git["builds"][arm]["source"]["kind"] = "git";
    CHECK_THAT(matched_gate(git), Catch::Contains("the control build is of a git source, the experiment's is debian"));
    auto blank = qemu;  // no point names the kernel it booted
    for (auto& point : blank["points"]) {
      point["kernel_release"] = "";
      point["environment"].erase("kernel_release");
    }
    CHECK_THAT(matched_gate(blank), Catch::Contains("point 0 (patched) booted a kernel it does not name"));
    auto config = qemu;  // both of another config than the experiment's
    for (auto arm : {"control", "patched"}) {
      config["builds"][arm]["config"]["base"] = "defconfig";
      config["builds"][arm]["config"]["fragments"] = nlohmann::json::array();
    }
    CHECK_THAT(matched_gate(config), Catch::Contains("the control build's config is defconfig + [], the experiment's tinyconfig + [btrfs-bench]"));
    auto one = qemu;  // one kernel image as both
    one["builds"]["control"]["bzimage"] = one["builds"]["patched"]["bzimage"];
    CHECK_THAT(matched_gate(one), Catch::Contains("the control and patched builds are one kernel image"));
    auto huge = qemu;  // a release of a megabyte, quoted once and cut (sixty-fifth: 56 MB of messages)
    huge["builds"]["patched"]["kernel_release"] = std::string(1 << 20, 'A');
    const auto detail = matched_gate(huge);
    CHECK_THAT(detail, Catch::Contains("(and 5 point(s) more)"));
    CHECK(detail.size() < 1000);
    auto swapped = qemu;  // the builds' own arm fields swapped
    swapped["builds"]["control"]["arm"] = "patched";
    CHECK_THAT(matched_gate(swapped), Catch::Contains("the control build is the patched arm's"));
  }
  SECTION("a row that names another arm than its point ran") {
    raw["rows"][0]["arm"] = raw["rows"][0]["arm"] == "control" ? "patched" : "control";
    CHECK(find(check(raw), "/rows/0/arm"));
  }
  SECTION("a point id used twice") {
    raw["points"][2]["id"] = raw["points"][1]["id"];
    CHECK(find(check(raw), "/points/2/id"));
  }
}

TEST_CASE("validate: the JSON output has valid, schema_errors and recomputed_mismatches") {
  pipeline::Validation v;
  v.recomputed_mismatches.push_back({"/verdict", "NO_CHANGE", "INVALID", ""});
  json j = v;
  CHECK(j["valid"] == false);
  CHECK(j["schema_errors"].empty());
  CHECK(j["recomputed_mismatches"][0]["path"] == "/verdict");
  CHECK(j["recomputed_mismatches"][0]["recomputed"] == "INVALID");
  CHECK(pipeline::describe(v.recomputed_mismatches[0]) ==
        "/verdict: the bundle says \"NO_CHANGE\", the raw data give \"INVALID\"");
  CHECK(json(pipeline::Validation{})["valid"] == true);
}

TEST_CASE("validate: every reader judges rows of the experiment's workloads, and builds audited again") {
  // Thirty-eighth attack: each of these passed validate and analyze with exit 0 where the run
  // itself exited 1 or 3.
  auto b = evidence::from_json(fixture("qemu-confirm.json"));
  REQUIRE(pipeline::rejudged(b).verdict != "INVALID");
  auto ghost = b;  // a point's rows renamed, its oops with them
  for (auto& r : ghost.rows)
    if (r.point == 9) r.workload = "ghost";
  CHECK_THROWS_WITH(pipeline::rejudged(ghost), Catch::Contains("workload 'ghost', which its experiment does not run"));
  auto no_builds = b;  // a QEMU run without the builds its audit reads
  no_builds.builds = json::object();
  CHECK(pipeline::rejudged(no_builds).verdict == "INVALID");
  auto cut = b;  // a block deleted (with a failed point, or points still to run): exit 0 alone
  cut.points.resize(10);
  std::erase_if(cut.rows, [](auto& r) { return r.point >= 10; });
  CHECK_THROWS_WITH(pipeline::rejudged(cut), Catch::Contains("the bundle's 10 points are not the 12 its plan has"));
  auto swapped = b;
  swapped.points[0].arm = swapped.points[0].arm == "control" ? "patched" : "control";
  for (auto& r : swapped.rows)
    if (r.point == swapped.points[0].id) r.arm = swapped.points[0].arm;
  CHECK_THROWS_WITH(pipeline::rejudged(swapped), Catch::Contains("its plan has"));
  auto other_compiler = b;  // the stored audit still all PASS
  other_compiler.builds["patched"]["toolchain"]["compiler"] = "clang version 19";
  CHECK(pipeline::rejudged(other_compiler).verdict == "INVALID");
}

TEST_CASE("validate: every reader wants each finished point's rounds, its kernel log and the hits its experiment requires") {
  // Thirty-ninth attack: each of these passed validate and analyze with exit 0 where the run
  // itself exited 3, or cost readers minutes and gigabytes.
  auto b = evidence::from_json(fixture("qemu-confirm.json"));
  REQUIRE(pipeline::rejudged(b).verdict != "INVALID");
  auto failed_round_deleted = b;  // its rows held unexpected results
  std::erase_if(failed_round_deleted.rows, [](auto& r) { return r.point == 4 && r.round == 2 && !r.warmup; });
  auto rejudged = pipeline::rejudged(failed_round_deleted);
  CHECK(rejudged.verdict == "INVALID");
  CHECK(std::any_of(rejudged.analysis->gates.begin(), rejudged.analysis->gates.end(), [](auto& g) {
    return g.name == "semantic" && !g.passed && g.detail.find("have no record, first round 2 of point 4") != std::string::npos;
  }));
  // Forty-first attack: it is the workload's one semantic gate, so validate takes the honest
  // bundle (two of one name and scope failed it), and no copy of a passing one stands in.
  const auto& gates = rejudged.analysis->gates;
  for (auto& g : gates)
    if (g.name == "semantic")
      CHECK(std::count_if(gates.begin(), gates.end(), [&](auto& x) { return x.name == g.name && x.scope == g.scope; }) == 1);
  INFO(paths(check(evidence::to_json(rejudged))));
  CHECK(check(evidence::to_json(rejudged)).empty());
  auto twice = b;
  twice.rows.push_back(twice.rows[0]);
  CHECK_THROWS_WITH(pipeline::rejudged(twice), Catch::Contains("more than once"));
  auto ghost = b;  // rows of points no bundle holds: 20,000 of them made readers pair them all
  auto row = ghost.rows[0];
  row.point = 1000;
  ghost.rows.push_back(row);
  CHECK_THROWS_WITH(pipeline::rejudged(ghost), Catch::Contains("name point 1000, which the bundle does not hold"));
  auto other_arm = b;
  other_arm.rows[0].arm = other_arm.rows[0].arm == "control" ? "patched" : "control";
  CHECK_THROWS_WITH(pipeline::rejudged(other_arm), Catch::Contains("another arm or block"));
  auto no_log = b;  // its oops taken out with the record
  no_log.points[4].health = json::object();
  CHECK(pipeline::rejudged(no_log).verdict == "INVALID");
  auto not_required = b;  // the patch not exercised, and the records say it need not be
  for (auto& p : not_required.points)
    for (auto& hit : p.direct_hit) {
      hit["required"] = false;
      if (p.arm == "patched") hit["calls"] = 0;
    }
  CHECK(pipeline::rejudged(not_required).verdict == "INVALID");
  auto no_records = b;
  for (auto& p : no_records.points) p.direct_hit = json::array();
  CHECK(pipeline::rejudged(no_records).verdict == "INVALID");

  // Fortieth attack: counts that wrapped to 0, a clock the experiment does not give, and an
  // early stop the rows do not bear out.
  auto wrapped = b;
  wrapped.points[4].health = {{"marker", "m"}, {"scanned_lines", 250}, {"more_findings", UINT64_MAX},
                              {"findings", {{{"kind", "oops"}, {"line", "BUG: unable to handle page fault"}}}}};
  CHECK(pipeline::rejudged(wrapped).verdict == "INVALID");
  auto unexpected = b;
  for (auto& r : unexpected.rows)
    if (r.workload == "clone") r.unexpected_results = uint64_t{1} << 63;
  CHECK(pipeline::rejudged(unexpected).verdict == "INVALID");
  auto wall = b;  // no machine.clock: wall time, where the experiment asks for instructions
  wall.experiment["clock"] = "instructions";
  CHECK_THROWS_WITH(pipeline::rejudged(wall), Catch::Contains("timed in wall, but its experiment and accelerator give icount"));
  auto host = evidence::from_json(fixture("host-confirm.json"));
  const int last = host.points.back().block;
  std::erase_if(host.points, [&](auto& p) { return p.block == last; });
  std::erase_if(host.rows, [&](auto& r) { return r.block == last; });
  host.extra["stopped"] = {{"blocks_run", last}, {"blocks_planned", last + 1}, {"early", true},
                           {"reason", "every workload was decided"}};
  if (!evidence::all_decided(*pipeline::rejudged(evidence::from_json(fixture("host-confirm.json"))).analysis)) {
    CHECK_THROWS_WITH(pipeline::rejudged(host), Catch::Contains("which its own rows do not bear out"));
  }
  host.points.pop_back();  // and never in the middle of a block
  std::erase_if(host.rows, [&](auto& r) { return r.point > host.points.back().id; });
  CHECK_THROWS_WITH(pipeline::rejudged(host), Catch::Contains("which its own rows do not bear out"));

  // Forty-first attack: a plan cut to fewer blocks than its points ("the first 3 decide" made
  // INCONCLUSIVE NO_CHANGE), and a sizing record on a screen bundle (a known spread for its
  // one degree of freedom made INCONCLUSIVE NO_CHANGE).
  auto smaller = evidence::from_json(fixture("host-confirm.json"));
  REQUIRE(smaller.plan["blocks"].get<int>() > 1);
  smaller.plan["blocks"] = smaller.plan["blocks"].get<int>() - 1;
  CHECK_THROWS_WITH(pipeline::rejudged(smaller), Catch::Contains("is not a run of its experiment"));
  auto screen = evidence::from_json(fixture("host-screen.json"));
  auto sized = screen;
  json workloads = json::array();
  for (auto& w : screen.experiment["workloads"]) workloads.push_back({{"workload", w["name"]}, {"sd_block_log_ratio_pct", 0.3}});
  sized.extra["sizing"] = {{"blocks", 1}, {"reason", "the experiment fixes blocks = 1"}, {"workloads", workloads}};
  CHECK(evidence::to_json(*pipeline::rejudged(sized).analysis) == evidence::to_json(*pipeline::rejudged(screen).analysis));

  // Forty-second attack: rounds the experiment asks for are counted, not listed, however many
  // (a 3 KB bundle of 200 points and 100,000 rounds without a row took readers a gigabyte).
  auto many = evidence::from_json(fixture("host-confirm.json"));
  const auto rounds = many.experiment["rounds"].get<uint64_t>();
  many.experiment["rounds"] = 100000;
  auto judged = pipeline::rejudged(many);
  uint64_t ok_points = 0;
  for (auto& p : many.points) ok_points += p.status == "ok";
  const auto expected = std::to_string(ok_points * (100000 - rounds)) + " round(s) of finished points have no record, first round " +
                        std::to_string(rounds) + " of point " + std::to_string(many.points[0].id);
  CHECK(std::any_of(judged.analysis->gates.begin(), judged.analysis->gates.end(), [&](auto& g) {
    return g.name == "semantic" && !g.passed && g.detail.find(expected) != std::string::npos;
  }));
}

TEST_CASE("validate: a point's direct-hit gates are matched in order, so two required functions validate and no copy stands in") {
  // Forty-sixth attack: each stored gate was matched to the first of its name and scope.
  auto raw = json::parse(read_file(test::source_dir() / "tests/data/bundles/qemu-confirm.json"));
  for (auto& hit : raw["experiment"]["direct_hits"]) hit["required"] = true;
  for (auto& p : raw["points"])
    for (auto& hit : p["direct_hit"]) hit["required"] = true;
  auto both = rederived(raw);
  auto gate_of = [](const json& gates, const std::string& scope, size_t n) {
    size_t seen = 0;
    for (size_t i = 0; i < gates.size(); ++i)
      if (gates[i]["name"] == "direct_hit" && gates[i]["scope"] == scope && seen++ == n) return i;
    FAIL("no direct_hit gate " << n << " of " << scope);
    return size_t(0);
  };
  const auto scope = both["analysis"]["gates"][gate_of(both["analysis"]["gates"], "point 1", 1)]["scope"].get<std::string>();
  INFO(paths(check(both)));
  CHECK(check(both).empty());
  // The second function not called in point 1: its gate fails, and a copy of the first
  // (passing) gate written over it is caught.
  raw["points"][1]["direct_hit"][1]["calls"] = 0;
  auto failing = rederived(raw);
  auto& gates = failing["analysis"]["gates"];
  CHECK_FALSE(gates[gate_of(gates, scope, 1)]["passed"].get<bool>());
  gates[gate_of(gates, scope, 1)] = gates[gate_of(gates, scope, 0)];
  auto ms = check(failing);
  INFO(paths(ms));
  CHECK(find(ms, "/analysis/gates[direct_hit: " + scope + " #2]/passed"));
}

TEST_CASE("validate: a direct-hit count below 0 or not whole is a malformed record, not 2^64 - 1 calls") {
  auto b = evidence::from_json(fixture("qemu-confirm.json"));
  for (const json& calls : {json(-1), json(1e308), json(2.5)}) {
    auto edited = b;
    for (auto& p : edited.points) p.direct_hit[0]["calls"] = calls;
    INFO(calls.dump());
    CHECK_THROWS_WITH(pipeline::rejudged(edited), Catch::Contains("a direct_hit record is malformed"));
  }
}

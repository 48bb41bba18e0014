// `ksandwich compare`: last night's bundle against tonight's, with the same verdict rules.
#include <catch2/catch.hpp>

#include "pipeline/bundle_file.hpp"
#include "pipeline/compare.hpp"
#include "report/report.hpp"
#include "util/error.hpp"

using namespace ks;

namespace {

// A finished run of one workload: POINTS patched points, 3 rounds each, ns/op near LEVEL
// (each point a little off, as boots are), each in a block with a control point at the same
// level, ids POINTS and up (a run compare takes must stand alone).
evidence::Bundle run_of(double level, int points, const std::string& workload = "clone") {
  static int runs = 0;
  evidence::Bundle b;
  // A real experiment's, with this one workload (compare reads what each workload did).
  static const auto real = pipeline::load_bundle(std::string(KS_SOURCE_DIR) + "/tests/data/bundles/qemu-confirm.json");
  b.experiment = real.experiment;
  b.experiment.erase("gates");
  b.experiment.erase("direct_hits");
  b.experiment["rounds"] = 3;  // the rows' rounds
  b.experiment["warmup_rounds"] = 0;
  b.builds = real.builds;  // its kernels, audited
  b.experiment["workloads"] = {{{"name", workload}, {"ops", 1000}}};
  b.experiment_name = "nightly";
  b.created_at = "2026-12-03T00:00:00." + std::to_string(runs++) + "Z";
  b.plan = {{"rounds", 3}, {"warmup_rounds", 0}};
  static const double kPointNoise[] = {1.00, 1.01, 0.99, 1.005, 0.995, 1.0};
  for (int i = 0; i < 2 * points; ++i) {
    const int p = i % points;
    const std::string arm = i < points ? "patched" : "control";
    evidence::Point point;
    point.id = i;
    point.block = p;
    point.arm = arm;
    point.status = "ok";
    point.kernel_release = real.builds[arm]["kernel_release"];
    point.health = {{"marker", "m"}, {"scanned_lines", 100}, {"findings", nlohmann::json::array()}};
    b.points.push_back(point);
    for (int r = 0; r < 3; ++r) {
      evidence::Row row;
      row.point = i;
      row.block = p;
      row.arm = arm;
      row.round = r;
      row.workload = workload;
      row.ops = 1000;
      row.ns_per_op = level * kPointNoise[p % 6] * (1 + 0.002 * r);
      row.elapsed_ns = static_cast<uint64_t>(*row.ns_per_op * 1000);
      b.rows.push_back(row);
    }
  }
  evidence::Analysis a;
  evidence::WorkloadAnalysis w;
  w.workload = workload;
  w.metric = "ns_per_op";
  a.workloads.push_back(w);
  b.analysis = a;
  return b;
}

}  // namespace

TEST_CASE("compare: tonight 30% slower than last night is a material REGRESSION") {
  auto c = pipeline::compare_bundles(run_of(5000, 4), run_of(6500, 4), {});
  REQUIRE(c.analysis);
  REQUIRE(c.analysis->workloads.size() == 1);
  auto& w = c.analysis->workloads[0];
  CHECK(w.verdict == "REGRESSION");
  CHECK(w.material);
  REQUIRE(w.ratio_ci);
  CHECK(w.ratio_ci->low < 1.3);
  CHECK(w.ratio_ci->high > 1.3);
  CHECK(c.verdict == "REGRESSION");
  // Every patched point of both runs is there, relabelled: last night is control.
  CHECK(c.points.size() == 8);
  CHECK(c.points[0].arm == "control");
  CHECK(c.points[7].arm == "patched");
}

TEST_CASE("compare: the same level twice is no material change") {
  auto c = pipeline::compare_bundles(run_of(5000, 4), run_of(5000, 4), {});
  REQUIRE(c.analysis);
  auto& w = c.analysis->workloads[0];
  CHECK((w.verdict == "NO_CHANGE" || w.verdict == "INCONCLUSIVE"));
  CHECK_FALSE(w.material);
}

TEST_CASE("compare: material as the runs were judged, unless they disagree or --material-pct says") {
  auto before = run_of(5000, 4), after = run_of(5150, 4);  // +3%
  for (auto* b : {&before, &after}) b->experiment["gates"] = {{"material_pct", 5}};
  auto c = pipeline::compare_bundles(before, after, {});
  CHECK(c.experiment["compare"]["material_pct"] == 5);
  CHECK_FALSE(c.analysis->workloads[0].material);  // +3% is within the runs' 5%
  pipeline::CompareOptions one;
  one.material_pct = 1;
  CHECK(pipeline::compare_bundles(before, after, one).analysis->workloads[0].material);
  after.experiment["gates"]["material_pct"] = 2;
  CHECK_THROWS_WITH(pipeline::compare_bundles(before, after, {}), Catch::Contains("5% in A, 2% in B"));
  CHECK_NOTHROW(pipeline::compare_bundles(before, after, one));
}

TEST_CASE("compare: bundles of different workloads, or without the arm, are refused") {
  CHECK_THROWS_AS(pipeline::compare_bundles(run_of(5000, 3, "clone"), run_of(5000, 3, "dedupe"), {}),
                  UserError);
  // Thirty-fourth attack: a workload only tonight's run has, 50% slower, went unjudged and
  // compare said NO_CHANGE, exit 0.
  auto both = run_of(5000, 3, "clone"), added = run_of(5000, 3, "dedupe");
  auto tonight = run_of(5000, 3, "clone");
  for (auto row : added.rows) {
    *row.ns_per_op *= 1.5;
    tonight.rows.push_back(row);
  }
  tonight.experiment["workloads"].push_back(added.experiment["workloads"][0]);
  CHECK_THROWS_WITH(pipeline::compare_bundles(both, tonight, {}),
                    Catch::Contains("workload 'dedupe' is in the second bundle but not in the first"));
  // And the direction is the metric's: an analysis calling a time per op "higher is better"
  // made a 30% slower run an improvement.
  auto before = run_of(5000, 4), after = run_of(6500, 4);
  before.analysis->workloads[0].higher_is_better = after.analysis->workloads[0].higher_is_better = true;
  CHECK(pipeline::compare_bundles(before, after, {}).verdict == "REGRESSION");
  // Thirty-fifth attack: compare took only the ok points, so a run that lost a point to a
  // failed boot (INVALID alone), or was cut short, passed the gate.
  auto failed = run_of(6500, 4), cut = run_of(6500, 4);
  failed.points[3].status = "failed";
  cut.points[3].status = "pending";
  CHECK_THROWS_WITH(pipeline::compare_bundles(run_of(5000, 4), failed, {}), Catch::Contains("1 point(s) failed"));
  CHECK_THROWS_WITH(pipeline::compare_bundles(cut, run_of(5000, 4), {}), Catch::Contains("the first bundle is a run with 1 point(s) not run"));
  pipeline::CompareOptions control_only;
  control_only.arm = "control";
  auto patched_only = run_of(5000, 3);
  std::erase_if(patched_only.points, [](auto& p) { return p.arm == "control"; });
  std::erase_if(patched_only.rows, [](auto& r) { return r.arm == "control"; });
  CHECK_THROWS_AS(pipeline::compare_bundles(run_of(5000, 3), patched_only, control_only), UserError);
  // Thirty-sixth attack: 4 KiB clones against 1 MiB ones, or zram against brd, compared as one
  // workload ("IMPROVEMENT", exit 0).
  auto other = run_of(5000, 3);
  other.experiment["workloads"][0]["range_bytes"] = 1 << 20;
  other.experiment["storage"]["size_mib"] = 512;
  CHECK_THROWS_WITH(pipeline::compare_bundles(run_of(5000, 3), other, {}),
                    Catch::Contains("workload 'clone' did other work in the two runs: range_bytes '4096' in A, "
                                    "'1048576' in B; storage 'brd 1024 MiB' in A, 'brd 512 MiB' in B"));
  other.experiment.erase("workloads");
  CHECK_THROWS_WITH(pipeline::compare_bundles(run_of(5000, 3), other, {}),
                    Catch::Contains("the second bundle's experiment cannot be read"));
  // Thirty-seventh: on the host backend what the arms set (mount options, sysfs knobs) is all
  // that tells them apart; the compared arm's must match, the other's need not.
  auto mounted = run_of(5000, 3);
  mounted.experiment["arms"]["patched"]["mount_options"] = {"compress=zstd"};
  CHECK_THROWS_WITH(pipeline::compare_bundles(run_of(5000, 3), mounted, {}),
                    Catch::Contains("patched mount options '' in A, 'compress=zstd' in B"));
  pipeline::CompareOptions controls;
  controls.arm = "control";
  CHECK_NOTHROW(pipeline::compare_bundles(run_of(5000, 3), mounted, controls));
}

TEST_CASE("compare: the workloads are the experiments', not the analysis stored beside them") {
  // Thirty-seventh attack: dedupe, 200% slower in B, left out of both stored analyses, went
  // unjudged: NO_CHANGE, exit 0.
  auto a = run_of(5000, 3), b = run_of(5000, 3);
  auto da = run_of(5000, 3, "dedupe"), db = run_of(15000, 3, "dedupe");
  for (auto [run, extra] : {std::pair{&a, &da}, std::pair{&b, &db}}) {
    run->experiment["workloads"].push_back(extra->experiment["workloads"][0]);
    for (auto row : extra->rows) run->rows.push_back(row);
  }
  auto c = pipeline::compare_bundles(a, b, {});
  REQUIRE(c.analysis->workloads.size() == 2);
  CHECK(c.verdict == "REGRESSION");
}

TEST_CASE("compare: a run INVALID alone is refused, whichever arm is compared") {
  // Thirty-sixth attack: a patched kernel that oopsed in a point (INVALID alone, exit 3) was
  // an IMPROVEMENT compared, exit 0.
  auto oopsed = run_of(4000, 4);
  oopsed.points[0].health = {{"findings", {{{"kind", "BUG"}, {"line", "BUG: unable to handle page fault"}}}}};
  CHECK_THROWS_WITH(pipeline::compare_bundles(run_of(5000, 4), oopsed, {}),
                    Catch::Contains("the second bundle is INVALID judged alone (failed gates: kernel_health)"));
  // Thirty-seventh: and one whose control kernel oopsed, compared by its patched arm.
  auto control_oopsed = run_of(4000, 4);
  REQUIRE(control_oopsed.points[5].arm == "control");
  control_oopsed.points[5].health = {{"findings", {{{"kind", "Oops"}, {"line", "Oops: 0000 [#1] SMP"}}}}};
  CHECK_THROWS_AS(pipeline::compare_bundles(run_of(5000, 4), control_oopsed, {}), UserError);
  // Thirty-eighth: and control rows with unexpected results.
  auto unexpected = run_of(4000, 4);
  for (auto& r : unexpected.rows)
    if (r.point == 6) r.unexpected_results = 7;
  CHECK_THROWS_WITH(pipeline::compare_bundles(run_of(5000, 4), unexpected, {}), Catch::Contains("INVALID judged alone"));
  // And unmatched builds in either run, audited again from the builds whatever the stored
  // audit says (thirty-eighth attack).
  auto unmatched = run_of(4000, 4);
  unmatched.builds["patched"]["toolchain"]["compiler"] = "clang version 19";
  CHECK_THROWS_WITH(pipeline::compare_bundles(unmatched, run_of(5000, 4), {}), Catch::Contains("matched builds"));
  // Nor does a later commit the patched identity names, and the experiment does not, let its
  // config differ (thirty-eighth attack).
  auto later = [](double level) {
    auto b = run_of(level, 4);
    b.builds["patched"]["config"]["sha256"] = "dddd";
    b.builds["patched"]["commit"] = {{"name", "master"}, {"sha", "bbbb2222"}, {"subject", "Linux 6.2-rc1"}};
    return b;
  };
  CHECK_THROWS_WITH(pipeline::compare_bundles(later(4000), later(5000), {}), Catch::Contains("matched builds"));
  CHECK(pipeline::compare_bundles(run_of(5000, 4), run_of(4000, 4), {}).verdict == "IMPROVEMENT");
  // Forty-first: a failed round of one workload (INVALID alone) behind another workload's
  // REGRESSION, which outranks INVALID in the run's verdict.
  auto two = [](double patched_dedupe) {
    auto b = run_of(5000, 4);
    auto d = run_of(5000, 4, "dedupe");
    b.experiment["workloads"].push_back(d.experiment["workloads"][0]);
    for (auto row : d.rows) {
      if (row.arm == "patched") {
        *row.ns_per_op *= patched_dedupe * (1 + 0.01 * (row.point % 3));  // each block its own ratio
        row.elapsed_ns = static_cast<uint64_t>(*row.ns_per_op * 1000);
      }
      b.rows.push_back(row);
    }
    return b;
  };
  auto behind = two(1.5);
  REQUIRE(behind.rows[1].workload == "clone");
  behind.rows.erase(behind.rows.begin() + 1);  // clone's round 1 of point 0
  REQUIRE(pipeline::analyze_bundle(experiment::parse(behind.experiment), behind).verdict == "REGRESSION");
  CHECK_THROWS_WITH(pipeline::compare_bundles(two(1.0), behind, {.arm = "control"}), Catch::Contains("INVALID judged alone"));
}

namespace {

evidence::Bundle real_bundle() {
  return pipeline::load_bundle(std::string(KS_SOURCE_DIR) + "/tests/data/bundles/qemu-confirm.json");
}

}  // namespace

TEST_CASE("compare: a real bundle against itself has no environment change, and is refused as one run") {
  auto a = real_bundle();
  CHECK(pipeline::environment_changes(a, a, "patched").empty());
  CHECK(pipeline::machine_fingerprint(a).size() == 16);
  CHECK_THROWS_WITH(pipeline::compare_bundles(a, a, {}), Catch::Contains("A and B are one run"));
  auto b = a;  // another night on the same machine
  b.created_at = "2026-12-04T02:00:00Z";
  CHECK_FALSE(pipeline::compare_bundles(a, b, {}).extra.contains("environment_changes"));
}

TEST_CASE("compare: another CPU, accelerator, config or tool major version is refused, naming each") {
  auto a = real_bundle();
  auto b = a;
  b.machine["cpu_model"] = "AMD EPYC 7763 64-Core Processor";
  b.machine["accelerator"]["used"] = "kvm";
  b.builds["patched"]["config"]["sha256"] = "0123";
  b.tool["version"] = "1.0.0";
  auto changes = pipeline::environment_changes(a, b, "patched");
  std::vector<std::string> names;
  for (auto& ch : changes) names.push_back(ch.name);
  CHECK(names == std::vector<std::string>{"CPU model", "accelerator", "kernel config (patched)",
                                          "tool major version"});
  CHECK(pipeline::machine_fingerprint(a) != pipeline::machine_fingerprint(b));
  try {
    pipeline::compare_bundles(a, b, {});
    FAIL("compare accepted bundles from two machines");
  } catch (const UserError& e) {
    std::string what = e.what();
    CHECK(what.find("CPU model: 'Intel(R) Xeon(R) Processor' in A, 'AMD EPYC 7763 64-Core Processor' in B") !=
          std::string::npos);
    CHECK(what.find("accelerator: 'tcg' in A, 'kvm' in B") != std::string::npos);
    CHECK(std::string(e.hint()).find("--allow-environment-change") != std::string::npos);
  }
  // The control arm's config did not change: comparing control arms names one fewer fact.
  CHECK(pipeline::environment_changes(a, b, "control").size() == 3);
  // A machine's facts left out are no match for any machine's (sixty-sixth attack).
  auto unrecorded = a;
  unrecorded.machine.erase("cpu_model");
  unrecorded.machine.erase("cores");
  unrecorded.created_at = "2026-12-04T02:00:00Z";
  CHECK_THROWS_WITH(pipeline::compare_bundles(a, unrecorded, {}),
                    Catch::Contains("CPU model: 'Intel(R) Xeon(R) Processor' in A, '(not recorded)' in B"));
}

TEST_CASE("compare: host runs of another running kernel, clocksource or storage are refused, naming each") {
  // Sixty-seventh attack: these compared, exit 4, without a word.
  auto a = pipeline::load_bundle(std::string(KS_SOURCE_DIR) + "/tests/data/bundles/host-confirm.json");
  auto b = a;
  b.created_at = "2026-12-05T00:00:00Z";
  b.machine["kernel_release"] = "6.1.0-other";
  b.machine["clocksource"] = "hpet";
  for (auto& p : b.points)
    if (p.arm == "patched") p.storage["kind"] = "brd";
  std::vector<std::string> names;
  for (auto& ch : pipeline::environment_changes(a, b, "patched")) names.push_back(ch.name);
  CHECK(names == std::vector<std::string>{"running kernel", "clocksource", "storage (patched)"});
  CHECK_THROWS_WITH(pipeline::compare_bundles(a, b, {}), Catch::Contains("running kernel: '6.18.44-fc-v657' in A, '6.1.0-other' in B"));
  // A QEMU run's kernels are its builds (their configs compared above), not the host's.
  auto q = real_bundle(), r = q;
  r.machine["kernel_release"] = "6.1.0-other";
  CHECK(pipeline::environment_changes(q, r, "patched").empty());
}

TEST_CASE("compare: --allow-environment-change compares and puts the differences first in the report") {
  auto a = real_bundle();
  auto b = a;
  b.machine["cpu_model"] = "AMD EPYC 7763 64-Core Processor";
  b.tool["version"] = "0.2.0";  // same major version: comparable
  b.created_at = "2026-12-04T02:00:00Z";
  pipeline::CompareOptions o;
  o.allow_environment_change = true;
  auto c = pipeline::compare_bundles(a, b, o);
  REQUIRE(c.extra.contains("environment_changes"));
  REQUIRE(c.extra["environment_changes"].size() == 1);
  CHECK(c.extra["environment_changes"][0]["name"] == "CPU model");
  auto text = report::text(c);
  auto at = text.find("Environment changed between A and B");
  REQUIRE(at != std::string::npos);
  CHECK(text.find("CPU model: Intel(R) Xeon(R) Processor -> AMD EPYC 7763 64-Core Processor") != std::string::npos);
  CHECK(at < text.find("Backend"));
}

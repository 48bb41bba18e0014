// The plain-text report: the 000_* table, sentences and reply block, from a bundle.
#include <algorithm>
#include <catch2/catch.hpp>

#include "evidence/bundle.hpp"
#include "report/report.hpp"
#include "support/paths.hpp"
#include "unit/report/report_test_util.hpp"
#include "unit/report/sample_bundle.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

using Catch::Matchers::Contains;
using ks::test::flat;
using ks::test::line_starting;
using ks::test::lines_of;

namespace {

std::string text_of(const ks::evidence::Bundle& b, const std::string& tested_by = "") {
  ks::report::Options options;
  options.tester = tested_by;
  return ks::report::text(b, options);
}

}  // namespace

TEST_CASE("text: the sandwich table carries the point means and the delta vs the midpoint") {
  auto out = text_of(ks::test::make_sample_bundle());

  auto header = line_starting(out, "operation");
  CHECK_THAT(header, Contains("control A") && Contains("patched") && Contains("control B") &&
                         Contains("change"));
  auto clone = line_starting(out, "clone 4 KiB");
  CHECK_THAT(clone, Contains("2943.790") && Contains("2159.123") && Contains("2970.446") &&
                        Contains("-26.986%"));
  auto dedupe = line_starting(out, "dedupe 4 KiB");
  CHECK_THAT(dedupe, Contains("3535.456") && Contains("2762.835") && Contains("3546.942") &&
                         Contains("-21.980%"));
  // Each mean carries its point's spread, LKP's %stddev of the rounds.
  CHECK_THAT(clone, Contains("2943.790 +-"));
  // Columns line up: each cell ends where its header ends (right-aligned).
  CHECK(header.find("control A") + 9 == clone.find('%', clone.find("2943.790")) + 1);
  CHECK_THAT(flat(out), Contains("In a control -> patched -> control sandwich, means across all "
                                 "15 rounds, ns/op (lower is better), each +-stddev% of its "
                                 "rounds; change is patched vs the control midpoint:"));
}

TEST_CASE("text: the table caption says when warm-up rounds were left out") {
  auto b = ks::test::make_sample_bundle();
  for (auto& r : b.rows) r.warmup = r.round == 0;
  CHECK_THAT(flat(text_of(b)), Contains("means across all 15 measured rounds (warm-up rounds "
                                        "excluded), ns/op (lower is better), each"));
}

TEST_CASE("text: drift and skip-first sentences name each workload") {
  auto out = flat(text_of(ks::test::make_sample_bundle()));
  CHECK_THAT(out, Contains("The two control points drifted by 0.905% for clone and 0.325% for "
                           "dedupe."));
  CHECK_THAT(out, Contains("Dropping the first round from each point produced deltas of "
                           "-27.178% and -22.128%."));
}

TEST_CASE("text: the semantic line counts timing rows and names failures") {
  auto b = ks::test::make_sample_bundle();
  CHECK_THAT(flat(text_of(b)), Contains("All 90 timing rows passed the semantic checks: "
                                        "expected_match_ratio=100 and unexpected_results=0."));

  b.rows[0].warmup = true;  // warm-up rounds are not timing rows
  CHECK_THAT(flat(text_of(b)), Contains("All 89 timing rows passed"));

  b.rows[20].unexpected_results = 3;
  b.rows[20].expected_match_ratio = 99.97;
  b.rows[50].error = "clocks disagree";
  auto out = flat(text_of(b));
  CHECK_THAT(out, Contains("2 of 89 timing rows failed the semantic checks"));
  CHECK_THAT(out, Contains("expected_match_ratio=99.97, unexpected_results=3"));
  CHECK_THAT(out, Contains("error: clocks disagree"));
  CHECK_THAT(out, !Contains("All 89 timing rows passed"));
}

TEST_CASE("text: one verdict line per workload, with CI and MDE when present") {
  auto b = ks::test::make_sample_bundle();
  auto out = flat(text_of(b));
  CHECK_THAT(out, Contains("clone: patched vs control: -27.0% ns/op (95% CI -28.1% .. -25.9%), "
                           "IMPROVEMENT (material), MDE 0.8%"));
  CHECK_THAT(out, Contains("dedupe: patched vs control: -22.0% ns/op (95% CI -23.1% .. -20.9%), "
                           "IMPROVEMENT (material), MDE 0.8%"));

  for (auto& w : b.analysis->workloads) {
    w.ratio_ci.reset();
    w.mde_pct.reset();
  }
  out = flat(text_of(b));
  CHECK_THAT(out, Contains("clone: patched vs control: -27.0% ns/op, IMPROVEMENT (material)"));
  CHECK_THAT(out, !Contains("CI") && !Contains("MDE"));
}

TEST_CASE("text: caveats from the analysis are listed once, scoped when not shared") {
  auto b = ks::test::make_sample_bundle();
  b.analysis->workloads[0].notes.push_back("only clone has this caveat");
  auto out = flat(text_of(b));
  CHECK(ks::test::count_of(out, "the interval rests on 1 degree(s) of freedom") == 1);
  CHECK_THAT(out, Contains("Caveats: - 1 patched and 2 control point(s): the interval rests"));
  CHECK_THAT(out, Contains("- (clone) only clone has this caveat"));
}

TEST_CASE("text: environment warnings from the bundle are shown") {
  auto b = ks::test::make_sample_bundle();
  CHECK_THAT(text_of(b), !Contains("Warnings"));
  b.extra["warnings"] = {"point 3 differs from point 1 in clocksource: tsc -> hpet"};
  CHECK_THAT(text_of(b), Contains("Warnings\n--------\n\n- point 3 differs from point 1 in "
                                  "clocksource: tsc -> hpet\n"));
}

TEST_CASE("text: the header describes kernels, machine, storage and plan") {
  auto out = flat(text_of(ks::test::make_sample_bundle()));
  CHECK_THAT(out, Contains("Kernels: 7.1.0-ks (every arm)"));
  CHECK_THAT(out, Contains("i7-12700KF, 20 CPUs, 32 GiB memory, virtualization kvm, "
                           "clocksource tsc"));
  CHECK_THAT(out, Contains("workload pinned to CPU 2"));
  CHECK_THAT(out, Contains("Storage: brd 1024 MiB (/dev/ram0), fresh btrfs per point"));
  CHECK_THAT(out, Contains("Plan: screen: control -> patched -> control, 15 rounds x 10,000 ops, "
                           "0 warm-up rounds"));
  CHECK_THAT(out,
             Contains("sha256 5ec741be5a89d6dae0c0608cc036512770b55d6a49e9b576b4aa3115ebfdffd3"));
}

TEST_CASE("text: failed gates are listed with their detail, passing ones summarised") {
  auto b = ks::test::make_sample_bundle();
  CHECK_THAT(flat(text_of(b)), Contains("All 6 gates passed"));
  // Drift is no gate any more (issue 10): a semantic failure is the typical one.
  ks::test::make_invalid(b, "semantic", "clone", "3 unexpected results");
  auto out = flat(text_of(b));
  CHECK_THAT(out, Contains("1 of 7 gates failed:"));
  CHECK_THAT(out, Contains("- semantic (clone): 3 unexpected results"));
  CHECK_THAT(out, Contains("clone: patched vs control: -27.0% ns/op (95% CI -28.1% .. -25.9%), "
                           "INVALID (failed: semantic)"));
  CHECK_THAT(out, Contains("Verdict: INVALID (failed gates: semantic)"));
}

TEST_CASE("text: environment gates render like any other gate") {
  auto b = ks::test::make_sample_bundle();
  b.analysis->gates.push_back(
      {"environment", "experiment", false, "clocksource differs: tsc (point 1), hpet (point 2)"});
  CHECK_THAT(flat(text_of(b)),
             Contains("- environment (experiment): clocksource differs: tsc (point 1), hpet "
                      "(point 2)"));
}

TEST_CASE("text: a failed point shows its reason and an indented console tail") {
  auto b = ks::test::make_sample_bundle();
  b.points[2].status = "failed";
  b.points[2].failure = "guest did not report within 900 s";
  b.points[2].console_tail = "[   12.1] BUG: kernel NULL pointer dereference\n[   12.2] end\n";
  auto out = text_of(b);
  CHECK_THAT(flat(out), Contains("Point 3 (control) failed: guest did not report within 900 s"));
  CHECK(line_starting(out, "    [   12.1] BUG: kernel NULL pointer dereference") != "");
  CHECK(line_starting(out, "    [   12.2] end") != "");
}

TEST_CASE("text: a long console line is broken between characters, never inside one") {
  auto b = ks::test::make_sample_bundle();
  b.points[2].status = "failed";
  b.points[2].failure = "boom";
  // U+06DB is DB 9B: cut in two, the second line would start with 0x9b, ESC [ to an 8-bit
  // terminal (twenty-third attack).
  b.points[2].console_tail = "x\n" + std::string(73, 'A') + "\xdb\x9b" "31mX\n";
  auto out = text_of(b);
  CHECK(out.find("\xdb\x9b" "31mX") != std::string::npos);  // the character whole, on the next line
  CHECK(out.find("\n      \x9b") == std::string::npos);
  for (auto& line : lines_of(out)) CHECK((line.empty() || (static_cast<unsigned char>(line.back()) & 0xe0) != 0xc0));
}

TEST_CASE("text: the matched-build audit table shortens hashes") {
  auto b = ks::test::make_sample_bundle();
  auto out = text_of(b);
  auto row = line_starting(out, "source_sha256");
  CHECK_THAT(row, Contains("PASS") && Contains("f9a48549a15a..."));
  CHECK_THAT(row, !Contains("f9a48549a15aa369"));
  CHECK_THAT(flat(out), Contains("patches: status PASS, control (none), patched 5ec741be5a89..., "
                                 "note expected to differ"));
  CHECK_THAT(flat(out), Contains("The two builds match in every audited field (5 fields"));

  b.builds["audit"][2]["status"] = "FAIL";
  b.builds["audit"][2]["patched"] = "gcc (GCC) 14.1.0";
  out = text_of(b);
  CHECK_THAT(line_starting(out, "compiler"), Contains("FAIL") && Contains("gcc (GCC) 14.1.0"));
  CHECK_THAT(flat(out), Contains("The builds differ where they must not: compiler."));

  b.builds.erase("audit");
  CHECK_THAT(text_of(b), !Contains("Matched-build audit"));
}

TEST_CASE("text: direct hits are counted like the 000 thread's sentence") {
  auto b = ks::test::make_sample_bundle();
  auto out = text_of(b);
  CHECK_THAT(flat(out),
             Contains("Point 2 (patched) observed 2,000 calls to btrfs_remap_file_range, "
                      "7,473 to btrfs_inhibit_eb_writeback, and 2,033 to "
                      "btrfs_uninhibit_all_eb_writeback."));
  CHECK_THAT(line_starting(out, "    2   patched   btrfs_inhibit_eb_writeback"), Contains("7,473"));

  b.points[1].direct_hit[0]["calls"] = 0;
  CHECK_THAT(text_of(b), Contains("NOT HIT"));
}

TEST_CASE("text: one health line per point") {
  auto b = ks::test::make_sample_bundle();
  auto out = text_of(b);
  CHECK_THAT(out, Contains("point 2 (patched): kernel log clean (812 lines scanned)"));
  b.points[1].health = {{"findings", {{{"kind", "WARNING"}, {"line", "WARNING: at inode.c:123"}}}},
                        {"scanned_lines", 900}};
  out = text_of(b);
  CHECK_THAT(out, Contains("point 2 (patched): 1 finding (900 lines scanned):"));
  CHECK_THAT(out, Contains("    [WARNING] WARNING: at inode.c:123"));
  CHECK_THAT(out, Contains("point 1 (control): kernel log clean"));
}

TEST_CASE("text: the reply block quotes the patch and adds Tested-by only when asked and valid") {
  auto b = ks::test::make_sample_bundle();
  auto without = text_of(b);
  CHECK_THAT(without,
             Contains("\n\nOn Tue, 14 Jul 2026 10:02:41 -0700, Leo Martins wrote:\n"
                      "> Subject: [PATCH v2] btrfs: replace writeback inhibition xarray with a fixed\n"
                      ">   inline buffer\n"));
  CHECK_THAT(without, Contains(">   inline buffer\n"
                               "> Message-ID: <20260714170241.1234567-1-loemra.dev@gmail.com>\n"));
  auto reply = flat(without.substr(without.find("--- reply")));
  CHECK_THAT(reply,
             Contains("clone -27.0% ns/op (95% CI -28.1% .. -25.9%, a material improvement)"));
  CHECK_THAT(reply, Contains("Verdict: IMPROVEMENT."));
  CHECK_THAT(without, !Contains("Tested-by:"));

  auto with = text_of(b, "Jane Doe <jane@example.org>");
  CHECK_THAT(with, Contains("\n\nTested-by: Jane Doe <jane@example.org>\n"));
  CHECK(with.find("Verdict: IMPROVEMENT.") < with.find("Tested-by:"));

  ks::test::make_invalid(b, "semantic", "clone", "3 rows with unexpected results");
  auto invalid = text_of(b, "Jane Doe <jane@example.org>");
  CHECK_THAT(invalid, Contains("--- reply"));
  CHECK_THAT(flat(invalid), Contains("The run is INVALID (failed: semantic), so these figures are "
                                     "not evidence either way."));
  CHECK_THAT(invalid, !Contains("Tested-by:"));
}

TEST_CASE("text: one quote per patch of a series, no reply without a Message-ID") {
  auto b = ks::test::make_sample_bundle();
  auto second = b.builds["patched"]["patches"][0];
  second["subject"] = "[PATCH v2 2/2] btrfs: second part";
  second["message_id"] = "<second@example.org>";
  b.builds["patched"]["patches"].push_back(second);
  auto out = text_of(b);
  CHECK(ks::test::count_of(out, "> Message-ID: ") == 2);
  CHECK_THAT(out, Contains("> Message-ID: <second@example.org>\n"));  // not double-bracketed

  for (auto& p : b.builds["patched"]["patches"]) p.erase("message_id");
  CHECK_THAT(text_of(b), !Contains("--- reply"));
}

TEST_CASE("text: plain ASCII, every line within 80 columns, ends with the verdict then the reply") {
  auto out = text_of(ks::test::make_sample_bundle(), "Jane Doe <jane@example.org>");
  CHECK(std::count_if(out.begin(), out.end(),
                      [](char c) { return static_cast<unsigned char>(c) > 127; }) == 0);
  for (auto& line : lines_of(out)) {
    INFO(line);
    CHECK(line.size() <= 80);  // tables, the audit and quoted subjects included
  }
  CHECK(out.find("Verdict: IMPROVEMENT") < out.find("--- reply"));
  // The headline names the workloads that carry the verdict, with their change.
  CHECK_THAT(out, Contains("\nVerdict: IMPROVEMENT (clone -27.0% and dedupe -22.0%)\n"));
}

TEST_CASE("text: a table too wide for mail becomes one wrapped line a row") {
  auto b = ks::test::make_sample_bundle();
  b.builds["audit"].push_back({{"field", "compiler"},
                               {"status", "PASS"},
                               {"control", "gcc (Debian 12.2.0-14+deb12u1) 12.2.0"},
                               {"patched", "gcc (Debian 12.2.0-14+deb12u1) 12.2.0"},
                               {"note", "expected to be the same compiler on both arms"}});
  auto out = text_of(b);
  CHECK_THAT(flat(out), Contains("compiler: status PASS, control gcc (Debian 12.2.0-14+deb12u1) "
                                 "12.2.0, patched gcc (Debian 12.2.0-14+deb12u1) 12.2.0, note "
                                 "expected to be the same compiler on both arms"));
  for (auto& line : lines_of(out)) {
    INFO(line);
    CHECK(line.size() <= 80);
  }
}

TEST_CASE("text: IOPS workloads get their own higher-is-better table") {
  auto b = ks::test::make_sample_bundle();
  ks::test::add_iops_workload(b);
  auto out = text_of(b);
  CHECK_THAT(flat(out), Contains("means across all 15 rounds, IOPS (higher is better), each"));
  // Too wide for 80 columns with its spreads: one wrapped line a row.
  CHECK_THAT(flat(out), Contains("dio-randwrite: control A 41250.000 +-0.5%, patched 33120.500 "
                                 "+-0.5%, control B 40870.000 +-0.5%"));
  CHECK_THAT(flat(out), Contains("dio-randwrite: patched vs control: -19.3% IOPS, REGRESSION "
                                 "(material)"));
  // The ns/op table does not list the IOPS workload.
  auto all = flat(out);
  auto ns_at = all.find("ns/op (lower"), iops_at = all.find("IOPS (higher");
  REQUIRE(ns_at < iops_at);
  CHECK_THAT(all.substr(ns_at, iops_at - ns_at), !Contains("dio-randwrite"));
  CHECK_THAT(flat(out), Contains("10,000 ops (clone and dedupe) / time-based (dio-randwrite)"));
}

TEST_CASE("text: a confirm run prints the per-point table instead of the sandwich") {
  auto out = text_of(ks::test::make_confirm_bundle());
  CHECK_THAT(out, !Contains("control A"));
  auto header = line_starting(out, "point   block   arm");
  CHECK_THAT(header, Contains("mean") && Contains("stddev") && Contains("n"));
  CHECK_THAT(line_starting(out, "   12       6   patched"),
             Contains("5123.000") && Contains("6.325"));
  CHECK_THAT(flat(out), Contains("confirm: 6 blocks in seeded order CP PC CP PC CP CP"));
  CHECK_THAT(flat(out), Contains("clone: patched vs control: +0.1% ns/op (95% CI -0.5% .. +0.6%), "
                                 "NO_CHANGE, MDE 1.4%"));
}

TEST_CASE("report: a sparse or odd bundle renders without throwing") {
  ks::evidence::Bundle empty;
  for (auto format : {"text", "markdown", "html"}) CHECK_NOTHROW(ks::report::render(empty, format));
  CHECK_THAT(flat(ks::report::text(empty)), Contains("no analysis yet: 0 rows from 0 points"));

  auto b = ks::test::make_sample_bundle();
  b.builds = {{"patched", {{"patches", "not a list"}}}, {"audit", {{{"status", 3}}}}};
  b.machine = nlohmann::json::array();
  b.points[0].health = "odd";
  b.points[1].direct_hit = nlohmann::json::array({nlohmann::json{{"calls", -5}}, "junk"});
  b.points[2].storage = nullptr;
  b.plan = nullptr;
  for (auto format : {"text", "markdown", "html"}) CHECK_NOTHROW(ks::report::render(b, format));
}

TEST_CASE("report: render names its formats and rejects others") {
  auto b = ks::test::make_sample_bundle();
  CHECK(ks::report::render(b, "text") == ks::report::text(b));
  CHECK(ks::report::render(b, "markdown") == ks::report::markdown(b));
  CHECK(ks::report::render(b, "html") == ks::report::html(b));
  CHECK_THROWS_AS(ks::report::render(b, "pdf"), ks::UserError);
}

TEST_CASE("text: a confirm run shows its block ratios and the blocks it used") {
  auto b = ks::test::make_confirm_bundle();
  auto out = text_of(b);
  CHECK_THAT(flat(out), Contains("clone: 6 of 6 blocks used (0 dropped); per block, patched / "
                                 "control of the points' best rounds (points: control, patched):"));
  auto header = line_starting(out, "block   points");
  CHECK_THAT(header, Contains("control") && Contains("patched") && Contains("ratio") &&
                         Contains("change"));
  CHECK_THAT(line_starting(out, "    2   4, 3"), Contains("5040.000") && Contains("5033.000"));
  CHECK_THAT(flat(out), Contains("the control arm trended +0.39% per block over the run "
                                 "(reported, not gated"));

  b.analysis->workloads[0].block_ratios.pop_back();
  b.analysis->workloads[0].blocks_dropped.push_back({6, "point 12 (patched) failed: timeout"});
  out = flat(text_of(b));
  CHECK_THAT(out, Contains("clone: 5 of 6 blocks used (1 dropped)"));
  CHECK_THAT(out, Contains("- block 6 dropped: point 12 (patched) failed: timeout"));
}

TEST_CASE("text: the bootstrap interval stays off the verdict line") {
  // Issue 10, problem 7: the bootstrap excluded 1 in 24-39% of A/A screens.
  auto out = text_of(ks::test::make_confirm_bundle());
  CHECK_THAT(flat(out), Contains("clone: patched vs control: +0.1% ns/op (95% CI -0.5% .. "
                                 "+0.6%), NO_CHANGE, MDE 1.4%"));
  CHECK_THAT(flat(out), !Contains("bootstrap"));  // a markdown/HTML detail, labelled there
  auto md = ks::report::markdown(ks::test::make_confirm_bundle());
  CHECK_THAT(md, Contains("bootstrap 95% CI -0.1% .. +0.2% (descriptive, not the decision)"));
}

TEST_CASE("text: an INVALID workload is named beside another's regression") {
  auto b = ks::test::make_sample_bundle();
  b.analysis->workloads[0].verdict = "REGRESSION";
  b.analysis->workloads[0].material = true;
  b.analysis->workloads[1].verdict = "INVALID";
  b.analysis->workloads[1].gates_failed = {"semantic"};
  b.analysis->verdict = b.verdict = "REGRESSION";
  CHECK_THAT(flat(text_of(b)), Contains("Verdict: REGRESSION (clone -27.0%) (INVALID: dedupe)"));
}

TEST_CASE("text: a confirm report fits in 80 columns") {
  // (The screen's audit table and quoted patch subjects can be wider: not checked here.)
  auto b = ks::test::make_confirm_bundle();
  b.analysis->workloads[0].blocks_dropped.push_back({7, "point 14 (patched) failed: the guest "
                                                        "did not report within 900 s"});
  for (auto& line : lines_of(text_of(b))) {
    INFO(line);
    CHECK(line.size() <= 80);
  }
}

TEST_CASE("text: the clock is said in the header, its unit in the tables, and counters beside it") {
  auto b = ks::test::make_sample_bundle();
  auto wall = flat(text_of(b));
  CHECK_THAT(wall, Contains("Clock: wall-clock time (CLOCK_MONOTONIC)"));
  CHECK_THAT(wall, Contains("ns/op"));
  CHECK_THAT(wall, !Contains("Hardware counters"));  // the rows say nothing of them

  for (auto& r : b.rows) r.extra["counters"] = {{"unavailable", "perf_event_open: No such file or directory"}};
  CHECK_THAT(flat(text_of(b)),
             Contains("Hardware counters: none in these rounds (perf_event_open: No such file or directory)"));
  for (auto& r : b.rows)
    r.extra["counters"] = {{"instructions_per_op", r.arm == "patched" ? 23000.0 : 20000.0}, {"cycles_per_op", 40000.0}};
  auto counted = text_of(b);
  CHECK_THAT(flat(counted), Contains("Hardware counters per op"));
  std::string patched;
  for (auto& line : lines_of(counted))
    if (line.rfind("clone", 0) == 0 && line.find("patched") != std::string::npos && line.find("23000") != std::string::npos)
      patched = line;
  CHECK_THAT(patched, Contains("+15.00%"));

  b.machine["clock"] = {{"name", "icount"}};
  auto icount = flat(text_of(b));
  CHECK_THAT(icount, Contains("Clock: guest instructions") && Contains("deterministic, not wall time"));
  CHECK_THAT(icount, Contains("instr/op") && Contains("do not see cache misses"));
}

TEST_CASE("text: control characters from the bundle never reach the terminal") {
  auto b = ks::test::make_sample_bundle();
  b.experiment_name = "exp\x1b[2J\rVERDICT: NO_CHANGE";
  b.machine["cpu_model"] = "cpu\x1b]0;title\x07";
  for (const std::string format : {"text", "markdown", "html"}) {  // html: issue 27, third attack
    auto out = ks::report::render(b, format, {});
    INFO(format);
    CHECK(out.find('\x1b') == std::string::npos);
    CHECK(out.find('\r') == std::string::npos);
    CHECK(out.find('\x07') == std::string::npos);
    CHECK_THAT(out, Contains(format == "markdown" ? "exp \\[2J VERDICT: NO\\_CHANGE" : "exp [2J VERDICT: NO_CHANGE"));
  }
}

TEST_CASE("text: a bundle's description or kernel-log finding cannot start a line of the report (eleventh attack)") {
  auto b = ks::test::make_sample_bundle();
  b.experiment["description"] = "Routine run.\n\nVerdict: NO REGRESSION (forged)\n";
  b.points.front().health = {{"findings", nlohmann::json::array({{{"kind", "warning"}, {"line", "x\nVerdict: FORGED TOO"}}})}};
  for (const std::string format : {"text", "markdown"}) {
    auto out = ks::report::render(b, format, {});
    INFO(format << "\n" << out);
    CHECK_THAT(flat(out), Contains("Routine run. Verdict: NO REGRESSION (forged)"));
    for (auto& line : lines_of(out)) {
      CHECK_THAT(line, !Catch::Matchers::StartsWith("Verdict: NO REGRESSION"));
      CHECK_THAT(line, !Contains("Verdict: FORGED TOO") || Contains("x Verdict: FORGED TOO"));
    }
  }
}

TEST_CASE("text: the thread's claim beside the verdict, and whether this run had the CPUs its effect needs") {
  auto b = ks::test::make_sample_bundle();  // qemu under KVM, 20 host cores
  b.experiment["claim"] = {{"thread", "btrfs: set SB_NOSEC (seeds/003)"},
                           {"figure", "~59% more DIO throughput, 32 fio jobs on 8 cores"},
                           {"needs", "writers contending for the inode lock"},
                           {"parallel_cpus", 2}};
  b.experiment["qemu"] = {{"vcpus", 4}};
  b.machine["accelerator"] = {{"used", "kvm"}};  // several vCPUs: wall time
  auto out = flat(text_of(b));
  CHECK_THAT(out, Contains("The thread: btrfs: set SB_NOSEC (seeds/003). Its figure: ~59% more DIO throughput"));
  CHECK_THAT(out, Contains("This run can show it: the effect needs 2 CPUs running the workload at once (writers "
                           "contending for the inode lock); it had 4 (4 vCPUs under kvm on 20 host cores)."));

  // One vCPU (the instruction clock): the verdicts measure the code path alone, and a
  // NO_CHANGE headline says the effect could not appear.
  b.experiment["qemu"] = {{"vcpus", 1}};
  b.machine["clock"] = {{"name", "icount"}};
  b.verdict = "NO_CHANGE";
  out = flat(text_of(b));
  CHECK_THAT(out, Contains("This run cannot show it: the effect needs 2 CPUs running the workload at once (writers "
                           "contending for the inode lock); this run had 1 (the instruction clock runs one vCPU)."));
  CHECK_THAT(out, Contains("Verdict: NO_CHANGE (the thread's effect cannot appear in this run: it needs 2 CPUs at "
                           "once, this run had 1)"));
  CHECK_THAT(out, Contains("The effect the thread reported cannot appear in this run: it needs 2 CPUs at once, this "
                           "run had 1."));  // in the reply, beside where it was measured
  // A verdict that found a change keeps its headline; the paragraph and the reply still say why.
  b.verdict = "IMPROVEMENT";
  out = text_of(b);
  CHECK_THAT(out, Contains("\nVerdict: IMPROVEMENT (clone -27.0% and dedupe -22.0%)\n"));
  CHECK_THAT(flat(out), Contains("The effect the thread reported cannot appear in this run"));

  // Pinned, a guest's vCPUs share one host CPU; so does a workload on a machine of its own.
  b.machine.erase("clock");
  b.experiment["qemu"] = {{"vcpus", 4}};
  b.experiment["cpu"] = 3;
  CHECK_THAT(flat(text_of(b)), Contains("this run had 1 (the workload pinned to CPU 3)"));
  b.backend = "host";
  CHECK_THAT(flat(text_of(b)), Contains("this run had 1 (the workload pinned to CPU 3)"));
  b.experiment.erase("cpu");
  CHECK_THAT(flat(text_of(b)), Contains("This run can show it: the effect needs 2 CPUs running the workload at once "
                                        "(writers contending for the inode lock); it had 20 (this machine's 20 CPUs)."));
  // A CPU-path claim (parallel_cpus 1, the default) says only the thread's figure.
  b.experiment["claim"].erase("parallel_cpus");
  out = flat(text_of(b));
  CHECK_THAT(out, Contains("The thread: btrfs: set SB_NOSEC"));
  CHECK_THAT(out, !Contains("show it"));
}

TEST_CASE("text: throughput in each second of the rounds, where the agent sampled it (the dips of seeds/004)") {
  auto b = ks::test::make_sample_bundle();
  const double mib = 1 << 20;
  for (auto& r : b.rows)
    if (r.workload == "clone")
      r.extra["per_second_bytes"] = r.arm == "control" ? nlohmann::json{100 * mib, 40 * mib, 100 * mib}
                                                       : nlohmann::json{100 * mib, 98 * mib, 102 * mib};
  auto out = flat(text_of(b));
  // Over every measured round of the arm: control's two points of 15 rounds, 90 seconds, a
  // third of them 40 (mean 80, sd 28.4: 36%); patched's 45 seconds of 98, 100, 102 (2%).
  CHECK_THAT(out, Contains("clone 4 KiB: throughput in each second of the measured rounds, MiB/s: control min "
                           "40.0, median 100.0, sd 36% of the mean over 90 seconds; patched min 98.0, median 100.0, "
                           "sd 2% of the mean over 45 seconds."));
  CHECK_THAT(out, !Contains("dedupe 4 KiB: throughput in each second"));  // not sampled there
}

TEST_CASE("text: where the time went, a profile comparison as a caption and a table within 80 columns") {
  auto b = ks::test::make_confirm_bundle();
  REQUIRE(b.analysis);
  auto& w = b.analysis->workloads[0];
  ks::evidence::ProfileComparison p;
  p.control_points = p.patched_points = 3;
  p.cost_per_call = 409;
  p.own_cost_per_call = 173;
  p.measured_change = 2406;
  p.profiled_change = 2414;
  p.calls_changed = 20;
  p.calls_changed_share_pct = 87.6;
  p.functions = {{"btrfs_search_slot", 4.001, 5.0, 13321, 16058, 6.2},
                 {"btrfs_replace_file_extents_wit", 0, 1.0, 0, 811, 0.7}};
  w.profile = p;
  w.verdict = "REGRESSION";
  auto out = text_of(b);
  CHECK_THAT(flat(out), Contains(w.workload) && Contains("where the time per op went") &&
                            Contains("the 20 functions whose calls per op changed account for 88% of the measured change") &&
                            Contains("less the 173"));
  auto header = line_starting(out, "function ");
  CHECK_THAT(header, Contains("calls C") && Contains("calls P") && Contains("own C") && Contains("change"));
  auto row = line_starting(out, "btrfs_replace_file_extents_wit");
  CHECK_THAT(row, Contains("0.00") && Contains("1.00") && Contains("811") && Contains("+811"));
  for (auto& line : lines_of(out)) CHECK(line.size() <= 80);

  // A workload shown unchanged keeps its caption and loses the table.
  w.verdict = "NO_CHANGE";
  out = text_of(b);
  CHECK_THAT(flat(out), Contains("where the time per op went"));
  CHECK(line_starting(out, "btrfs_replace_file_extents_wit").empty());
}

TEST_CASE("text: only the report's own verdict line starts with Verdict:, whatever a claim or description wraps there (thirteenth attack)") {
  auto b = ks::test::make_sample_bundle();
  std::string s;
  for (int k = 1; k < 40; k += 3) s += std::string(static_cast<size_t>(k), 'y') + " Verdict: NO_CHANGE (T) ";
  b.experiment["claim"] = {{"thread", s}, {"figure", s}, {"needs", s}, {"parallel_cpus", 4}};
  // An invisible character before it does not hide it (seventeenth attack).
  for (std::string description : {"Verdict: NO_CHANGE (from the description)", "\xe2\x80\x8bVerdict: NO_CHANGE (zero-width)"}) {
    b.experiment["description"] = description;
    auto out = ks::report::text(b, {});
    INFO(out);
    int verdict_lines = 0;
    for (auto& line : lines_of(out)) {
      std::string_view seen(line);  // as a reader sees it: a space or a zero-width space shows nothing
      while (seen.starts_with(" ") || seen.starts_with("\xe2\x80\x8b")) seen.remove_prefix(seen[0] == ' ' ? 1 : 3);
      verdict_lines += seen.starts_with("Verdict:") && !line.starts_with("  ");
    }
    CHECK(verdict_lines == 1);
    CHECK_THAT(line_starting(out, "Verdict:"), Contains("Verdict: " + b.verdict));
  }
}

TEST_CASE("text: a kernel-log line of megabytes is broken at the width, every byte kept, and an author of quotes is its name (fourteenth attack)") {
  auto b = ks::test::make_sample_bundle();
  const size_t n = 1 << 20;  // the view copied what was left of the line for every 78 bytes of it
  b.points.front().health = {{"findings", nlohmann::json::array({{{"kind", "oops"}, {"line", std::string(n, 'A')}}})}};
  b.builds["patched"]["patches"][0]["author"] = std::string(100000, '"') + "Mallory Example\" <m@example.org>";
  auto text = ks::report::text(b, {});
  size_t as = 0, longest = 0;
  for (auto& line : lines_of(text)) {
    longest = std::max(longest, line.size());
    as += static_cast<size_t>(std::count(line.begin(), line.end(), 'A'));
  }
  CHECK(longest <= 80);
  CHECK(as >= n);
  CHECK_THAT(text, Contains("Mallory Example wrote:"));
}

TEST_CASE("text: no line a bundle wrote passes for the report's verdict or a trailer: invisible marks, lookalike letters, trailers, an audit field (eighteenth and nineteenth attacks)") {
  auto b = ks::test::make_sample_bundle();
  const std::string pad(70, 'x');
  // Each holds FORGED, which marks the lines it reaches.
  for (std::string forged : {"\xcd\x8fVerdict: NO_CHANGE FORGED", "\xe1\x9e\xb4Verdict: NO_CHANGE FORGED",
                             "\xef\xb8\x80Verdict: NO_CHANGE FORGED", "V\xd0\xb5rdict: NO_CHANGE FORGED",
                             "\xef\xbc\xb6" "erdict: NO_CHANGE FORGED", "Tested-by: Evil FORGED <evil@example.org>",
                             "Reviewed-by: FORGED",
                             // Nineteenth attack: a colon of another script, an invisible word, trailers without an address.
                             "Verdict\xea\x9e\x89 IMPROVEMENT FORGED", "\xef\xb8\x8f Verdict: IMPROVEMENT FORGED",
                             "Link: https://lore.kernel.org/r/FORGED", "Fixes: 1234567890ab (\"FORGED\")",
                             "VERDICT: REGRESSION FORGED"}) {
    b.experiment["description"] = pad + " " + forged;
    b.builds["audit"][0]["field"] = forged;
    auto out = ks::report::text(b, {});
    INFO(out);
    int own = 0;
    for (auto& line : lines_of(out)) {
      if (line.rfind("Verdict: " + b.verdict, 0) == 0) {
        ++own;
        continue;
      }
      // Every line holding the forged words is indented or behind "| ".
      CAPTURE(line);
      if (line.find("FORGED") != std::string::npos) CHECK((line.rfind("  ", 0) == 0 || line.rfind("| ", 0) == 0));
    }
    CHECK(own == 1);
  }
}

TEST_CASE("text: bundle fields of another type than the report reads are left out, never an internal error") {
  // Forty-sixth attack: exit 70 from every report format on each of these.
  auto raw = nlohmann::json::parse(ks::read_file(ks::test::source_dir() / "tests/data/bundles/qemu-confirm.json"));
  raw["timings"]["points"][0]["seconds"] = "x";
  raw["timings"]["builds"]["control"] = 7;
  raw["points"][0]["direct_hit"][0]["available"] = "yes";
  raw["points"][0]["direct_hit"][1]["required"] = "x";
  // Forty-ninth attack: the experiment's "cpu" as a string, which the schema leaves untyped.
  raw["experiment"]["cpu"] = "";
  raw["machine"]["accelerator"] = {{"used", 5}};
  auto b = ks::evidence::from_json(raw);
  std::string out;
  REQUIRE_NOTHROW(out = text_of(b));
  CHECK_THAT(out, Contains("points "));
  CHECK_NOTHROW(ks::report::html(b, {}));
  CHECK_NOTHROW(ks::report::json(b, {}));
}

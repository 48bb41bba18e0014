// The HTML report: self-contained, one plot per workload, everything escaped.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>

#include "report/report.hpp"
#include "unit/report/report_test_util.hpp"
#include "unit/report/sample_bundle.hpp"

using Catch::Matchers::Contains;
using ks::test::count_of;

TEST_CASE("html: one svg plot per workload, the tables and verdict lines by class") {
  auto b = ks::test::make_sample_bundle();
  auto out = ks::report::html(b);
  CHECK(count_of(out, "<svg ") == 2);
  CHECK(count_of(out, "<svg class=\"ks-plot\" data-workload=\"clone\"") == 1);
  CHECK(count_of(out, "<svg class=\"ks-plot\" data-workload=\"dedupe\"") == 1);
  CHECK(count_of(out, "<table class=\"ks-table ks-sandwich\"") == 1);
  CHECK(count_of(out, "<table class=\"ks-table ks-points\"") == 2);
  CHECK(count_of(out, "<p class=\"ks-verdict ks-v-improvement\">") == 2);
  for (auto cls : {"ks-audit", "ks-direct-hit", "ks-gates"})
    CHECK(count_of(out, std::string("<table class=\"ks-table ") + cls + "\"") == 1);
  CHECK(count_of(out, "<p class=\"ks-health\">") == 3);
  CHECK_THAT(out, Contains("<td class=\"num\">2943.790 +-"));
  CHECK_THAT(out, Contains("<td class=\"num\">-26.986%</td>"));
  CHECK_THAT(out, Contains("<div class=\"ks-badge ks-v-improvement\">IMPROVEMENT</div>"));

  ks::test::add_iops_workload(b);
  out = ks::report::html(b);
  CHECK(count_of(out, "<svg class=\"ks-plot\"") == 3);
  CHECK_THAT(out, Contains("IOPS (higher is better)"));
}

TEST_CASE("html: every round is a dot, each point's best round is drawn as measured") {
  auto out = ks::report::html(ks::test::make_sample_bundle());
  auto clone = out.substr(out.find("data-workload=\"clone\""));
  clone = clone.substr(0, clone.find("</svg>"));
  CHECK(count_of(clone, "<circle class=\"ks-round\"") == 45);
  CHECK_THAT(clone, Contains("ns/op (lower is better)"));
  CHECK_THAT(clone, Contains("point 2 (patched) round 0: "));

  // Best-round segments in point order; SVG y grows downwards, so the faster patched point
  // is drawn below both control points, and control B above A.
  std::regex mean_line("<line class=\"ks-best\" x1=\"[0-9.]+\" y1=\"([0-9.]+)\"");
  std::vector<double> y;
  for (std::sregex_iterator it(clone.begin(), clone.end(), mean_line), end; it != end; ++it)
    y.push_back(std::stod((*it)[1]));
  REQUIRE(y.size() >= 3);
  CHECK(y[1] > y[0]);
  CHECK(y[1] > y[2]);
  CHECK(y[2] < y[0]);
}

TEST_CASE("html: text from the bundle is escaped, nothing is fetched") {
  auto b = ks::test::make_sample_bundle();
  b.experiment_name = "<script>alert(1)</script>";
  b.points[2].status = "failed";
  b.points[2].console_tail = "</pre><script>alert(2)</script>";
  b.builds["audit"][0]["control"] = "\"><img src=x onerror=alert(3)>";
  for (auto& r : b.rows)
    if (r.workload == "dedupe") r.workload = "de\"dupe<x>";
  b.analysis->workloads[1].workload = "de\"dupe<x>";
  auto out = ks::report::html(b);

  std::string lower = out;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  CHECK_THAT(lower, !Contains("<script") && !Contains("<img"));
  CHECK_THAT(out, Contains("<h1 class=\"ks-title\">&lt;script&gt;alert(1)&lt;/script&gt;</h1>"));
  CHECK_THAT(out, Contains("&lt;/pre&gt;&lt;script&gt;alert(2)&lt;/script&gt;"));
  CHECK_THAT(out, Contains("data-workload=\"de&quot;dupe&lt;x&gt;\""));
}

TEST_CASE("html: self-contained, nothing fetched from anywhere") {
  auto out = ks::report::html(ks::test::make_sample_bundle());
  std::string lower = out;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  CHECK_THAT(lower, !Contains("http://") && !Contains("https://") && !Contains("<link") &&
                        !Contains("<script") && !Contains("<img") && !Contains(" src=") &&
                        !Contains(" href=") && !Contains("url(") && !Contains("@import"));
  CHECK(out.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK_THAT(out, Contains("<style>"));
  CHECK(out.substr(out.size() - 8) == "</html>\n");
}

TEST_CASE("html: a screen's control midpoint is that of the control points' best rounds") {
  auto b = ks::test::make_sample_bundle();
  auto out = ks::report::html(b);
  auto clone = out.substr(out.find("data-workload=\"clone\""));
  clone = clone.substr(0, clone.find("</svg>"));
  std::vector<double> best;
  for (auto& p : b.analysis->workloads[0].points)
    if (p.arm == "control") best.push_back(p.min);
  REQUIRE(best.size() == 2);
  std::smatch m;
  REQUIRE(std::regex_search(clone, m, std::regex("control midpoint of the best rounds: ([0-9,.]+) ns/op")));
  auto shown = m[1].str();
  shown.erase(std::remove(shown.begin(), shown.end(), ','), shown.end());
  CHECK(std::stod(shown) == Approx(std::sqrt(best[0] * best[1])).epsilon(1e-6));
}

TEST_CASE("html: the plot draws the value the verdict reads, and marks a block left out with why") {
  auto b = ks::test::make_confirm_bundle();
  b.analysis->workloads[0].blocks_dropped.push_back({3, "point 5 failed"});
  auto out = ks::report::html(b);
  // Point 1's rounds are 5002..5018 ns/op, mean 5010: the segment is its best, 5002.
  CHECK_THAT(out, Contains("<title>point 1 (control) best round: 5,002.000 ns/op</title>"));
  CHECK_THAT(out, !Contains("ks-mean"));
  // Block 3 holds points 5 and 6: both say they are left out, and why.
  CHECK(count_of(out, "left out<title>") == 2);
  CHECK_THAT(out, Contains("left out<title>point 5&#39;s block is not in the verdict: point 5 failed</title>") ||
                      Contains("left out<title>point 5's block is not in the verdict: point 5 failed</title>"));
  CHECK_THAT(out, Contains("<title>point 6 (patched) best round: 5,055.000 ns/op (left out)</title>"));
  CHECK_THAT(out, Contains("best round (the verdict&#39;s)") || Contains("best round (the verdict's)"));
}

TEST_CASE("html: a confirm run labels its blocks and shows the per-point table") {
  auto out = ks::report::html(ks::test::make_confirm_bundle());
  CHECK(count_of(out, "<svg class=\"ks-plot\"") == 1);
  CHECK(count_of(out, "<circle class=\"ks-round\"") == 60);
  CHECK(count_of(out, ">block ") == 6);
  CHECK(count_of(out, "<table class=\"ks-table ks-sandwich\"") == 0);
  CHECK(count_of(out, "<table class=\"ks-table ks-points\"") == 1);
  CHECK_THAT(
      out,
      Contains("<p class=\"ks-verdict ks-v-no_change\">clone: patched vs control: +0.1% ns/op"));
}

TEST_CASE("html: a profile comparison's changes are drawn as bars, more time right and red, less left and green") {
  auto b = ks::test::make_sample_bundle();
  auto& w = b.analysis->workloads[0];
  REQUIRE(w.verdict != "NO_CHANGE");
  ks::evidence::ProfileComparison p;
  p.control_points = p.patched_points = 2;
  p.measured_change = 300;
  p.functions = {{"btrfs_getxattr", 0, 1, 0, 400, 1}, {"btrfs_get_64", 20, 20, 600, 400, 1}};
  w.profile = p;
  auto out = ks::report::html(b);
  CHECK(count_of(out, "<table class=\"ks-table ks-profile\"") == 1);
  CHECK(count_of(out, "<svg class=\"ks-bar\"") == 2);
  // +400 is the column's largest: the whole right half; -200 half the left half.
  CHECK_THAT(out, Contains("aria-label=\"+400\"><line x1=\"50\" y1=\"0\" x2=\"50\" y2=\"10\"/><rect class=\"ks-bar-more\" "
                           "x=\"50.0\" y=\"1\" width=\"50.0\""));
  CHECK_THAT(out, Contains("<rect class=\"ks-bar-less\" x=\"25.0\" y=\"1\" width=\"25.0\""));
}

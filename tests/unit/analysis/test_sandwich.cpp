#include <catch2/catch.hpp>
#include <cmath>

#include "analysis/analyze.hpp"
#include "analysis/sandwich.hpp"
#include "synthetic.hpp"

using namespace ks;

namespace {

// The brief's hand example: A = {10, 12}, P = {8, 8}, B = {11, 13} (rounds of each point).
test::Synthetic hand_example() {
  test::Synthetic s;
  s.points = {test::make_point(0, "control"), test::make_point(1, "patched"),
              test::make_point(2, "control")};
  test::add_rows(s.rows, 0, "control", {10, 12});
  test::add_rows(s.rows, 1, "patched", {8, 8});
  test::add_rows(s.rows, 2, "control", {11, 13});
  return s;
}

const std::vector<analysis::WorkloadSpec> kClone{{"clone", "ns_per_op", false}};

}  // namespace

TEST_CASE("analysis: the 000_* sandwich table by hand", "[analysis]") {
  const auto s = hand_example();
  const auto a = analysis::analyze(s.points, s.rows, kClone, {});
  REQUIRE(a.workloads.size() == 1);
  const auto& w = a.workloads[0];
  // A = 11, P = 8, B = 12; midpoint 11.5; delta 100 (8 - 11.5) / 11.5; drift 100 (12 - 11) / 11
  CHECK(w.control_a == Approx(11.0));
  CHECK(w.patched == Approx(8.0));
  CHECK(w.control_b == Approx(12.0));
  CHECK(w.control_midpoint == Approx(11.5));
  CHECK(w.delta_pct == Approx(-30.434782608695652));
  CHECK(w.drift_pct == Approx(9.090909090909092));
  // First round dropped: A = 12, P = 8, B = 13; midpoint 12.5; delta -36%; drift 8.3333%
  CHECK(w.delta_pct_skip_first == Approx(-36.0));
  CHECK(w.drift_pct_skip_first == Approx(8.333333333333334));
}

TEST_CASE("analysis: per-point summaries in point order", "[analysis]") {
  const auto s = hand_example();
  const auto w = analysis::analyze(s.points, s.rows, kClone, {}).workloads.at(0);
  REQUIRE(w.points.size() == 3);
  CHECK(w.points[0].point == 0);
  CHECK(w.points[0].arm == "control");
  CHECK(w.points[0].n == 2);
  CHECK(w.points[0].mean == Approx(11.0));
  CHECK(w.points[0].min == 10);
  CHECK(w.points[0].max == 12);
  CHECK(w.points[0].stddev == Approx(1.4142135623730951));  // sqrt(2)
  CHECK(w.points[0].mean_skip_first == Approx(12.0));
  CHECK(w.points[0].median == Approx(11.0));
  CHECK(w.points[1].stddev == 0.0);
  CHECK(w.points[2].mean == Approx(12.0));
  CHECK(w.rows == 6);
}

TEST_CASE("analysis: warm-up rows and failed rows stay out of the statistics", "[analysis]") {
  auto s = hand_example();
  auto warm = test::make_row(0, "control", 0, 1000.0);
  warm.warmup = true;
  auto failed = test::make_row(1, "patched", 3, 5000.0);
  failed.error = "clocks disagreed";
  s.rows.push_back(warm);
  s.rows.push_back(failed);
  const auto w = analysis::analyze(s.points, s.rows, kClone, {}).workloads.at(0);
  CHECK(w.control_a == Approx(11.0));
  CHECK(w.patched == Approx(8.0));
  CHECK(w.points[1].n == 2);
  CHECK(w.failed_rounds == 1);
  CHECK(w.rows == 7);  // the failed measured row counts, the warm-up row does not
}

TEST_CASE("analysis: the confirm table uses every point", "[analysis]") {
  // The old table took the first and last control points and a delta against their
  // midpoint; now the arm means cover every point and delta_pct is the paired estimate.
  test::Synthetic s;
  s.points = {test::make_point(0, "control", 0), test::make_point(1, "patched", 0),
              test::make_point(2, "patched", 1), test::make_point(3, "control", 1),
              test::make_point(4, "control", 2), test::make_point(5, "patched", 2)};
  test::add_rows(s.rows, 0, "control", {100});
  test::add_rows(s.rows, 1, "patched", {110});
  test::add_rows(s.rows, 2, "patched", {130});
  test::add_rows(s.rows, 3, "control", {102});
  test::add_rows(s.rows, 4, "control", {90});
  test::add_rows(s.rows, 5, "patched", {99});
  analysis::Options o;
  o.scheme = "confirm";
  const auto w = analysis::analyze(s.points, s.rows, kClone, o).workloads.at(0);
  CHECK(w.control_a == 100);
  CHECK(w.control_b == 90);
  CHECK(w.drift_pct == Approx(-10.0));
  CHECK(w.patched == Approx(113));               // mean of the patched point means
  CHECK(w.control_midpoint == Approx(292 / 3.0));  // mean of the control point means
  const double d = (std::log(1.1) + std::log(130.0 / 102) + std::log(1.1)) / 3;
  CHECK(w.delta_pct == Approx(100 * (std::exp(d) - 1)));
  CHECK(w.block_ratios.size() == 3);
  // The control trend over blocks: ln 100, ln 102, ln 90 on 0, 1, 2.
  const double slope = (std::log(90.0) - std::log(100.0)) / 2;
  REQUIRE(w.control_trend_pct_per_block);
  CHECK(*w.control_trend_pct_per_block == Approx(100 * (std::exp(slope) - 1)));
}

TEST_CASE("analysis: sandwich with one control point has no drift", "[analysis]") {
  const std::vector<evidence::PointSummary> points{{0, "control", 2, 10, 9, 11, 1, 10},
                                                   {1, "patched", 2, 12, 11, 13, 1, 12}};
  const auto t = analysis::sandwich(points, "control", "patched");
  CHECK(t.control_a == 10);
  CHECK(t.control_b == 10);
  CHECK(t.drift_pct == 0);
  CHECK(t.delta_pct == Approx(20.0));
  const auto empty = analysis::sandwich({points[0]}, "control", "patched");
  CHECK(empty.delta_pct == 0);
  CHECK(empty.control_midpoint == 0);
}

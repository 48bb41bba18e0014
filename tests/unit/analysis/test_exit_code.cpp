#include <catch2/catch.hpp>

#include "analysis/analyze.hpp"
#include "synthetic.hpp"

using namespace ks;

namespace {

evidence::Bundle bundle_of(const test::Synthetic& s, const std::string& scheme = "confirm") {
  analysis::Options o;
  o.scheme = scheme;
  evidence::Bundle b;
  b.points = s.points;
  b.rows = s.rows;
  b.analysis = analysis::analyze(s.points, s.rows, {{"clone", "ns_per_op", false}}, o);
  b.verdict = b.analysis->verdict;
  return b;
}

}  // namespace

TEST_CASE("analysis: exit code 1 on a material regression", "[analysis]") {
  const auto s = test::synthetic(test::confirm_arms(6), 1000, 1200, 0.003, 0.005, 10, 31);
  CHECK(analysis::exit_code_for(bundle_of(s)) == 1);
}

TEST_CASE("analysis: exit code 0 on no change, improvement or an immaterial regression", "[analysis]") {
  const auto same = test::synthetic(test::confirm_arms(6), 1000, 1000, 0.002, 0.003, 10, 32);
  CHECK(analysis::exit_code_for(bundle_of(same)) == 0);
  const auto faster = test::synthetic(test::confirm_arms(6), 1000, 800, 0.002, 0.003, 10, 33);
  CHECK(analysis::exit_code_for(bundle_of(faster)) == 0);
  const auto tiny = test::synthetic(test::confirm_arms(6), 1000, 1003, 0.0002, 0.0002, 10, 34);
  const auto b = bundle_of(tiny);
  REQUIRE(b.analysis->workloads[0].verdict == "REGRESSION");
  CHECK(analysis::exit_code_for(b) == 0);
}

TEST_CASE("analysis: exit code 3 when a point failed, even with a regression", "[analysis]") {
  auto s = test::synthetic(test::confirm_arms(6), 1000, 1200, 0.003, 0.005, 10, 35);
  s.points[3].status = "failed";
  CHECK(analysis::exit_code_for(bundle_of(s)) == 3);
}

TEST_CASE("analysis: exit code 3 when a semantic check failed", "[analysis]") {
  auto s = test::synthetic(test::confirm_arms(6), 1000, 1200, 0.003, 0.005, 10, 36);
  s.rows[7].unexpected_results = 1;
  CHECK(analysis::exit_code_for(bundle_of(s)) == 3);
}

TEST_CASE("analysis: exit code of a bundle without analysis", "[analysis]") {
  evidence::Bundle b;
  b.points = {test::make_point(0, "control")};
  CHECK(analysis::exit_code_for(b) == 0);
  b.points[0].status = "failed";
  CHECK(analysis::exit_code_for(b) == 3);
}

TEST_CASE("analysis: exit code 3 when any gate failed, e.g. a kernel warning", "[analysis]") {
  auto s = test::synthetic(test::confirm_arms(6), 1000, 1000, 0.002, 0.003, 10, 37);
  auto b = bundle_of(s);
  REQUIRE(analysis::exit_code_for(b) == 0);
  b.analysis->gates.push_back({"kernel_health", "point 2", false, "WARNING: at fs/btrfs/..."});
  CHECK(analysis::exit_code_for(b) == 3);
}

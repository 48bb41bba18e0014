// JUnit XML for CI: one test case per workload of a real bundle; a material regression
// fails, INVALID errs, INCONCLUSIVE is skipped with its reason, an unfinished run errs.
#include <catch2/catch.hpp>
#include <cstdio>

#include "pipeline/bundle_file.hpp"
#include "report/junit.hpp"

using namespace ks;

namespace {

size_t occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("junit: a real inconclusive run is three skipped test cases with reasons", "[report]") {
  auto b = pipeline::load_bundle(std::string(KS_SOURCE_DIR) + "/tests/data/bundles/qemu-confirm.json");
  auto xml = report::junit(b);
  CHECK(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>", 0) == 0);
  CHECK(occurrences(xml, "<testcase ") == 3);
  CHECK(occurrences(xml, "<skipped message=\"inconclusive at this run&#39;s size") == 3);
  CHECK(xml.find("name=\"clone\"") != std::string::npos);
  CHECK(xml.find("tests=\"3\" failures=\"0\" errors=\"0\" skipped=\"3\"") != std::string::npos);
  char mde[64];
  std::snprintf(mde, sizeof mde, "it could detect %.2f%%", *b.analysis->workloads[0].mde_pct);
  CHECK(xml.find(mde) != std::string::npos);
}

TEST_CASE("junit: a material regression fails, INVALID errs, NO_CHANGE passes", "[report]") {
  auto b = pipeline::load_bundle(std::string(KS_SOURCE_DIR) + "/tests/data/bundles/qemu-confirm.json");
  auto& w = b.analysis->workloads;
  w[0].verdict = "REGRESSION";
  w[0].material = true;
  w[1].verdict = "INVALID";
  w[1].gates_failed = {"kernel_health"};
  w[2].verdict = "NO_CHANGE";
  auto xml = report::junit(b);
  CHECK(xml.find("tests=\"3\" failures=\"1\" errors=\"1\" skipped=\"0\"") != std::string::npos);
  char failure[96];
  std::snprintf(failure, sizeof failure, "<failure type=\"REGRESSION\" message=\"material regression: ns_per_op %+.2f%%",
                w[0].delta_pct);
  CHECK(xml.find(failure) != std::string::npos);
  CHECK(xml.find("<error type=\"INVALID\" message=\"invalid data; failed gates: kernel_health\"/>") !=
        std::string::npos);
  CHECK(xml.find("<system-out>NO_CHANGE: ") != std::string::npos);
}

TEST_CASE("junit: an unfinished run is an error, never a pass", "[report]") {
  // Before, a bundle with pending points or no analysis gave tests="0" failures="0": green in CI.
  auto b = pipeline::load_bundle(std::string(KS_SOURCE_DIR) + "/tests/data/bundles/qemu-confirm.json");
  b.points[10].status = "pending";
  b.points[11].status = "pending";
  auto xml = report::junit(b);
  CHECK(xml.find("tests=\"4\" failures=\"0\" errors=\"1\" skipped=\"3\"") != std::string::npos);
  CHECK(xml.find("name=\"run\"><error type=\"UNFINISHED\" message=\"the run is unfinished: 2 of 12 points pending;") !=
        std::string::npos);
  b.analysis.reset();
  xml = report::junit(b);
  CHECK(xml.find("tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\"") != std::string::npos);
  CHECK(xml.find("2 of 12 points pending, no analysis yet") != std::string::npos);
}

TEST_CASE("junit: a change within the material threshold is skipped unless shown to be within it", "[report]") {
  // Thirty-sixth attack: +0.98% (95% interval +0.40% to +1.56%) passed in JUnit, where the run
  // itself said INCONCLUSIVE, exit 4: the interval reaches past the material 1%.
  auto b = pipeline::load_bundle(std::string(KS_SOURCE_DIR) + "/tests/data/bundles/qemu-confirm.json");
  b.experiment["gates"]["material_pct"] = 1;  // the run's own threshold (this one was judged with 5%)
  auto& w = b.analysis->workloads;
  for (auto& x : w) {
    x.verdict = "REGRESSION";
    x.material = false;
  }
  w[0].ratio_ci90 = evidence::Interval{1.0098, 1.0040, 1.0156, 0.90};  // beyond 1%: not equivalent
  w[1].ratio_ci90 = evidence::Interval{1.0030, 1.0010, 1.0050, 0.90};  // within 1%: NO_CHANGE
  w[2].ratio_ci90.reset();                                              // no interval: not shown
  auto xml = report::junit(b);
  CHECK(xml.find("tests=\"3\" failures=\"0\" errors=\"0\" skipped=\"2\"") != std::string::npos);
  CHECK(occurrences(xml, "<skipped message=\"a change within the material threshold, not shown to be within it") == 2);
  // A run judged with a 2% threshold: +0.40% to +1.56% is within it.
  b.experiment["gates"]["material_pct"] = 2;
  CHECK(report::junit(b).find("skipped=\"1\"") != std::string::npos);
}

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

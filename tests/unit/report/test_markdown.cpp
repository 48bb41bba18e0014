// The markdown report: GitHub-flavoured tables and headings, escaped.
#include <catch2/catch.hpp>

#include "report/report.hpp"
#include "unit/report/report_test_util.hpp"
#include "unit/report/sample_bundle.hpp"

using Catch::Matchers::Contains;

TEST_CASE("markdown: the sandwich as a GFM table with numeric columns right-aligned") {
  auto out = ks::report::markdown(ks::test::make_sample_bundle());
  CHECK_THAT(out, Contains("| operation | control A | patched | control B | change |\n"
                           "| :--- | ---: | ---: | ---: | ---: |\n| clone 4 KiB | 2943.790 +-"));
  CHECK_THAT(out, Contains("| -26.986% |\n| dedupe 4 KiB | 3535.456 +-"));
}

TEST_CASE("markdown: headings, the audit, direct hits, verdict and reply") {
  ks::report::Options options;
  options.tester = "Jane Doe <jane@example.org>";
  auto out = ks::report::markdown(ks::test::make_sample_bundle(), options);
  CHECK_THAT(out, Contains("# ksandwich report: btrfs-remap-writeback-inhibition-v2\n"));
  CHECK_THAT(out, Contains("**Verdict: IMPROVEMENT**"));
  CHECK_THAT(out, Contains("## Matched-build audit\n"));
  CHECK_THAT(out, Contains("| source\\_sha256 | PASS | f9a48549a15a... | f9a48549a15a... |  |"));
  CHECK_THAT(out, Contains("## Direct hits (ftrace)\n"));
  CHECK_THAT(out,
             Contains("| 2 | patched | btrfs\\_inhibit\\_eb\\_writeback | 7,473 | yes | hit |"));
  // Inference details, per-point tables and the full gate list are markdown-only detail.
  CHECK_THAT(out, Contains("clone: Hodges-Lehmann -27.1% (95% CI -28.2% .. -26.0%), 90% CI "
                           "-27.9% .. -26.1% (equivalence), bootstrap 95% CI -27.4% .. -26.6% (descriptive, "
                           "not the decision), "
                           "t-test p=0.012 (1 df), Holm-adjusted p=0.024, Mann-Whitney p=0.67 "
                           "(exact), SD within points 0.5%, SD between points 0.3%"));
  CHECK_THAT(out, Contains("| point | arm | mean | median | stddev | %stddev | n |"));
  CHECK_THAT(out, Contains("| measured | clone | PASS |"));
  // The reply is verbatim in a fence (no escaping inside), Tested-by included.
  CHECK_THAT(out, Contains("```text\n--- reply (reply.eml beside the report) ---\n"));
  CHECK_THAT(out, Contains("> Message-ID: <20260714170241.1234567-1-loemra.dev@gmail.com>\n"));
  CHECK_THAT(out, Contains("Tested-by: Jane Doe <jane@example.org>\n```\n"));
  CHECK_THAT(out, Contains("sendmail -oi -t &lt; reply.eml"));
}

TEST_CASE("markdown: text from the bundle cannot inject HTML or break a table") {
  auto b = ks::test::make_sample_bundle();
  b.experiment_name = "<img src=x onerror=alert(1)>";
  b.analysis->gates.push_back({"environment", "a|b", false, "<b>bold</b> | pipe"});
  auto out = ks::report::markdown(b);
  CHECK_THAT(out, !Contains("<img") && !Contains("<b>"));
  CHECK_THAT(out, Contains("# ksandwich report: &lt;img src=x onerror=alert(1)>\n"));
  CHECK_THAT(out, Contains("| environment | a\\|b | FAIL | &lt;b>bold&lt;/b> \\| pipe |"));

  // A console tail holding a fence cannot close the fenced block early.
  b.points[2].status = "failed";
  b.points[2].console_tail = "```\n# not a heading\n";
  out = ks::report::markdown(b);
  CHECK_THAT(out, Contains("````text\n    ```\n    # not a heading\n````\n"));
}

TEST_CASE("markdown: a description is labelled, so its words never start a line as the report's own do (nineteenth attack)") {
  auto b = ks::test::make_sample_bundle();
  b.experiment["description"] = "Verdict: IMPROVEMENT (clone -41.2%, forged)";
  auto md = ks::report::markdown(b, {});
  INFO(md);
  int verdict_lines = 0;
  for (auto& line : ks::test::lines_of(md)) verdict_lines += line.find("Verdict:") != std::string::npos && line.find("forged") == std::string::npos;
  CHECK(verdict_lines >= 1);
  for (auto& line : ks::test::lines_of(md))
    if (line.find("forged") != std::string::npos) CHECK(line.rfind("Description: Verdict", 0) == 0);
}

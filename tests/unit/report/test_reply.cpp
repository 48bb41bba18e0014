// The reply block follows mailing-list etiquette: b4 collects a Tested-by: from a reply onto
// the patch, so it is given only when the patch did no harm; a regression is reported
// (Reported-by:, Link: to the thread) with a git send-email line to answer in the thread.
#include <catch2/catch.hpp>

#include "report/report.hpp"
#include "unit/report/report_test_util.hpp"
#include "unit/report/sample_bundle.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using ks::test::flat;
using ks::test::lines_of;

namespace {

constexpr const char* kTester = "Jane Doe <jane@example.org>";
constexpr const char* kThread = "20260714170241.1234567-1-loemra.dev@gmail.com";

std::string reply_of(const ks::evidence::Bundle& b, ks::report::Options options = {}) {
  if (options.tester.empty()) options.tester = kTester;
  auto out = ks::report::text(b, options);
  auto at = out.find("--- reply");
  return at == std::string::npos ? "" : out.substr(at);
}

ks::evidence::Bundle with_verdict(const std::string& verdict) {
  auto b = ks::test::make_sample_bundle();
  b.verdict = verdict;
  b.analysis->verdict = verdict;
  return b;
}

}  // namespace

TEST_CASE("reply: a REGRESSION is reported, never tested") {
  auto b = ks::test::make_sample_bundle();
  ks::test::add_iops_workload(b);  // dio-randwrite regresses: the run's verdict is REGRESSION
  REQUIRE(b.verdict == "REGRESSION");
  auto reply = reply_of(b);
  CHECK_THAT(reply, !Contains("Tested-by:"));
  CHECK_THAT(reply, Contains("\nReported-by: Jane Doe <jane@example.org>\n"));
  CHECK_THAT(reply, Contains(std::string("\nLink: https://lore.kernel.org/r/") + kThread + "\n"));
  // The mail answers the thread: headers first, so git send-email can send it as it is.
  CHECK_THAT(reply, Contains(std::string("\nIn-Reply-To: <") + kThread + ">\n"));
  CHECK_THAT(reply, Contains("\nSubject: Re: [PATCH v2] btrfs: replace writeback inhibition"));
  CHECK_THAT(flat(reply), Contains(std::string("git send-email \\ --in-reply-to='<") + kThread +
                                   ">' \\ --to='loemra.dev@gmail.com' \\ reply.eml"));
}

TEST_CASE("reply: NO_CHANGE and IMPROVEMENT carry Tested-by, nothing else") {
  for (const char* verdict : {"NO_CHANGE", "IMPROVEMENT"}) {
    INFO(verdict);
    auto reply = reply_of(with_verdict(verdict));
    CHECK_THAT(reply, Contains("\nTested-by: Jane Doe <jane@example.org>\n"));
    CHECK_THAT(reply, !Contains("Reported-by:"));
    CHECK_THAT(reply, !Contains("Link:"));
    CHECK_THAT(reply, Contains("git send-email"));
  }
}

TEST_CASE("reply: INVALID and INCONCLUSIVE carry no trailer at all") {
  for (const char* verdict : {"INVALID", "INCONCLUSIVE"}) {
    INFO(verdict);
    auto reply = reply_of(with_verdict(verdict));
    CHECK_THAT(reply, Contains("--- reply"));
    CHECK_THAT(reply, !Contains("Tested-by:"));
    CHECK_THAT(reply, !Contains("Reported-by:"));
    CHECK_THAT(reply, !Contains("Link:"));
  }
}

TEST_CASE("reply: --in-reply-to names the thread, also for a patch without a Message-ID") {
  auto b = with_verdict("REGRESSION");
  for (auto& p : b.builds["patched"]["patches"]) p.erase("message_id");
  ks::report::Options options;
  CHECK(reply_of(b, options).empty());  // no thread known: no reply block
  options.in_reply_to = "<cover.1784637132@example.org>";
  auto reply = reply_of(b, options);
  CHECK_THAT(reply, Contains("\nIn-Reply-To: <cover.1784637132@example.org>\n"));
  CHECK_THAT(reply, Contains("\nLink: https://lore.kernel.org/r/cover.1784637132@example.org\n"));
  CHECK_THAT(reply, Contains("--in-reply-to='<cover.1784637132@example.org>'"));
}

TEST_CASE("reply: the attached bundle is named with its size and SHA-256") {
  ks::report::Options options;
  options.attachment = ks::report::Attachment{"bundle.json.gz", 12345, std::string(64, 'a')};
  auto reply = reply_of(with_verdict("NO_CHANGE"), options);
  CHECK_THAT(flat(reply), Contains("The evidence bundle is attached as bundle.json.gz (12,345 bytes)"));
  CHECK_THAT(reply, Contains("\nSHA-256: " + std::string(64, 'a') + "\n"));
  CHECK_THAT(flat(reply), Contains("attach bundle.json.gz from a mail client"));
}

TEST_CASE("reply: every line of the reply fits in 80 columns") {
  auto b = ks::test::make_sample_bundle();
  ks::test::add_iops_workload(b);
  ks::report::Options options;
  options.attachment = ks::report::Attachment{"bundle.json.gz", 25700, std::string(64, 'f')};
  for (auto& line : lines_of(reply_of(b, options))) {
    INFO(line);
    CHECK(line.size() <= 80);
  }
}

TEST_CASE("reply: a hostile patch's author, Message-ID and subject neither run when pasted nor add a header") {
  auto b = with_verdict("REGRESSION");
  auto& patch = b.builds["patched"]["patches"][0];
  patch["author"] = "Mallory <a'$(touch /tmp/pwned)'@x>";
  patch["message_id"] = "<evil@x>\nBcc: everyone@example.org";
  patch["subject"] = "[PATCH] btrfs: x\r\nBcc: more@example.org";
  ks::report::Options options;
  options.tester = "Jane <jane@example.org>\nCc: spy@example.org";
  auto reply = reply_of(b, options);
  REQUIRE_FALSE(reply.empty());
  for (auto& line : lines_of(reply)) {
    INFO(line);
    CHECK(line.rfind("Bcc:", 0) != 0);
    CHECK(line.rfind("Cc:", 0) != 0);
    CHECK(line.find('\r') == std::string::npos);
  }
  // Each value is one single-quoted shell word: the quote inside is closed, escaped, reopened.
  CHECK_THAT(reply, Contains("--to='a'\\''$(touch /tmp/pwned)'\\''@x'"));
  CHECK_THAT(reply, Contains("--in-reply-to='<evil@x> Bcc: everyone@example.org>'"));
  CHECK_THAT(reply, Contains("Reported-by: Jane <jane@example.org> Cc: spy@example.org\n"));
}

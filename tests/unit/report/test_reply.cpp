// The reply block follows mailing-list etiquette: b4 collects a Tested-by: from a reply onto
// the patch, so it is given only when the patch did no harm; a regression is reported
// in the 0-day robot's form (Reported-by:, Closes: the thread). The reply goes to the
// patch's author with the list on Cc, and mail() makes it a MIME mail with the bundle attached.
#include <catch2/catch.hpp>

#include <regex>

#include "report/report.hpp"
#include "util/hash.hpp"
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
  // b4 would collect a bare Reported-by: onto the regressing patch: the 0-day robot's form.
  CHECK_THAT(reply, Contains("\nIf you fix the issue in a separate patch/commit, kindly add:\n"
                             "| Reported-by: Jane Doe <jane@example.org>\n"));
  CHECK_THAT(reply, Contains(std::string("\n| Closes: https://lore.kernel.org/r/") + kThread + "\n"));
  CHECK_THAT(reply, !Contains("Link:"));
  // The mail answers the thread, to the patch's author.
  CHECK_THAT(reply, Contains(std::string("\nIn-Reply-To: <") + kThread + ">\n"));
  CHECK_THAT(reply, Contains("\nSubject: Re: [PATCH v2] btrfs: replace writeback inhibition"));
  CHECK_THAT(reply, Contains("\nTo: loemra.dev@gmail.com\n"));
  CHECK_THAT(reply, Contains("\nFrom: Jane Doe <jane@example.org>\n"));
  CHECK_THAT(reply, !Contains("git send-email"));
}

TEST_CASE("reply: NO_CHANGE and IMPROVEMENT carry Tested-by, nothing else") {
  for (const char* verdict : {"NO_CHANGE", "IMPROVEMENT"}) {
    INFO(verdict);
    auto reply = reply_of(with_verdict(verdict));
    CHECK_THAT(reply, Contains("\nTested-by: Jane Doe <jane@example.org>\n"));
    CHECK_THAT(reply, !Contains("Reported-by:"));
    CHECK_THAT(reply, !Contains("Closes:"));
    CHECK_THAT(reply, Contains("sendmail -oi -t < reply.eml"));
  }
}

TEST_CASE("reply: an IMPROVEMENT beside a workload it could not decide carries no Tested-by") {
  // Thirty-seventh attack: the run exited 4, its reply said IMPROVEMENT and Tested-by:, and
  // b4 would have collected that onto the patch.
  auto b = with_verdict("IMPROVEMENT");
  REQUIRE(b.analysis->workloads.size() >= 1);
  b.analysis->workloads[0].verdict = "INCONCLUSIVE";
  b.analysis->workloads[0].material = false;
  auto reply = reply_of(b);
  CHECK_THAT(reply, Contains("--- reply"));
  CHECK_THAT(reply, !Contains("Tested-by:"));
}

TEST_CASE("reply: INVALID and INCONCLUSIVE carry no trailer at all") {
  for (const char* verdict : {"INVALID", "INCONCLUSIVE"}) {
    INFO(verdict);
    auto reply = reply_of(with_verdict(verdict));
    CHECK_THAT(reply, Contains("--- reply"));
    CHECK_THAT(reply, !Contains("Tested-by:"));
    CHECK_THAT(reply, !Contains("Reported-by:"));
    CHECK_THAT(reply, !Contains("Closes:"));
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
  CHECK_THAT(reply, Contains("\nReferences: <cover.1784637132@example.org>\n"));
  CHECK_THAT(reply, Contains("\n| Closes: https://lore.kernel.org/r/cover.1784637132@example.org\n"));
}

TEST_CASE("reply: the attached bundle is named with its size and SHA-256") {
  ks::report::Options options;
  options.attachment = ks::report::Attachment{"bundle.json.gz", 12345, std::string(64, 'a'), ""};
  auto reply = reply_of(with_verdict("NO_CHANGE"), options);
  CHECK_THAT(flat(reply), Contains("The evidence bundle is attached as bundle.json.gz (12,345 bytes)"));
  CHECK_THAT(reply, Contains("\nSHA-256: " + std::string(64, 'a') + "\n"));
  CHECK_THAT(flat(reply), Contains("reply.eml (`ksandwich report BUNDLE --format eml` writes it again) is this "
                                   "reply as a MIME mail with the bundle attached"));
}

TEST_CASE("reply: every line of the reply fits in 80 columns, but a trailer's link, which is never wrapped") {
  auto b = ks::test::make_sample_bundle();
  ks::test::add_iops_workload(b);
  ks::report::Options options;
  options.attachment = ks::report::Attachment{"bundle.json.gz", 25700, std::string(64, 'f'), ""};
  for (auto& line : lines_of(reply_of(b, options))) {
    INFO(line);
    CHECK((line.size() <= 80 || line.rfind("| Closes: https://lore.kernel.org/r/", 0) == 0));
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
  // An address with a space in it goes nowhere; every value stays on its line.
  CHECK_THAT(reply, !Contains("\nTo:"));
  CHECK_THAT(reply, Contains("\nIn-Reply-To: <evil@x>\n"));  // the id in its brackets, nothing after it
  CHECK_THAT(reply, Contains("| Reported-by: Jane <jane@example.org> Cc: spy@example.org\n"));
  // A Message-ID no header can carry makes no mail at all.
  patch["message_id"] = "no id here\nBcc: everyone@example.org";
  CHECK(reply_of(b, options).empty());  // answers no thread
  CHECK_FALSE(ks::report::mail(b, options));
  // Nor does a hostile To:/Cc: of the patch mail add a recipient or a header.
  patch["message_id"] = "<fine@x>";
  patch["to"] = "x <a@x,b@y>, \"evil\nBcc: c@z\" <d@z>, e@z\r\nBcc: f@z";
  auto eml = ks::report::mail(b, options);
  REQUIRE(eml);
  for (auto& line : lines_of(*eml)) {
    INFO(line);
    CHECK(line.rfind("Bcc:", 0) != 0);
    CHECK(line.find('\r') == std::string::npos);
  }
  // The one clean address; no From: (one with more after its address is left to the
  // mailer) and no To: (the author's address has a space in it).
  CHECK(eml->rfind("Cc: d@z\nSubject: ", 0) == 0);
  // An address a mailer's command line would take as an option goes nowhere either.
  CHECK(ks::report::clean_address(" -oQ/tmp@x ") == "");
  CHECK(ks::report::mailbox_address("x <a-b@x.org>") == "a-b@x.org");
}

TEST_CASE("reply: mail() is a MIME mail to the author, the list on Cc, the bundle attached in base64") {
  auto b = with_verdict("REGRESSION");
  auto& patch = b.builds["patched"]["patches"][0];
  patch["to"] = "dsterba@suse.cz, \"Wenruo, Qu\" <wqu@suse.com>";
  patch["cc"] = "linux-btrfs@vger.kernel.org, Loemra <LOEMRA.dev@gmail.com>, josef@toxicpanda.com (Josef)";
  ks::report::Options options;
  options.tester = "Jürgen Tester <jt@example.org>";
  std::string content;
  for (int i = 0; i < 300; ++i) content += static_cast<char>(i * 7);  // binary, as a .gz is
  options.attachment = ks::report::Attachment{"bundle.json.gz", content.size(), std::string(64, 'c'), content};
  auto eml = ks::report::mail(b, options);
  REQUIRE(eml);
  INFO(*eml);
  // Headers: ASCII, a name outside ASCII as an encoded word, the author alone on To:, the
  // patch mail's To: and Cc: (the list among them) on Cc: without the author again.
  CHECK_THAT(*eml, Contains("From: =?UTF-8?B?SsO8cmdlbiBUZXN0ZXI=?= <jt@example.org>\n"));
  CHECK_THAT(*eml, Contains("\nTo: loemra.dev@gmail.com\n"));
  CHECK_THAT(*eml, Contains("\nCc: dsterba@suse.cz, wqu@suse.com, linux-btrfs@vger.kernel.org,\n josef@toxicpanda.com\n"));
  CHECK_THAT(*eml, Contains(std::string("\nIn-Reply-To: <") + kThread + ">\nReferences: <" + kThread + ">\n"));
  CHECK_THAT(*eml, Contains("\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"=_ksandwich_cccccccccccccccc\"\n"));
  const auto head = eml->substr(0, eml->find("\n\n"));
  for (auto& line : lines_of(head)) {
    INFO(line);
    CHECK(line.size() <= 78);
    CHECK(std::all_of(line.begin(), line.end(), [](unsigned char c) { return c >= ' ' && c < 0x7f; }));
  }
  // The text part is the reply; the attachment is the content, base64 in 76-column lines.
  CHECK_THAT(*eml, Contains("Content-Type: text/plain; charset=UTF-8\nContent-Transfer-Encoding: 8bit\n\n"));
  CHECK_THAT(*eml, Contains("| Reported-by: Jürgen Tester <jt@example.org>\n"));
  CHECK_THAT(*eml, Contains("Content-Disposition: attachment; filename=\"bundle.json.gz\"\n"
                            "Content-Transfer-Encoding: base64\n\n" + ks::base64(content.substr(0, 57)) + "\n"));
  CHECK_THAT(*eml, EndsWith("\n--=_ksandwich_cccccccccccccccc--\n"));
  // The table a maintainer scans: control and patched with their spread, and the change.
  CHECK_THAT(*eml, Contains("%change"));

  SECTION("a name with a comma is quoted") {
    options.tester = "Doe, Jane <jane@example.org>";
    auto quoted = ks::report::mail(b, options);
    REQUIRE(quoted);
    CHECK(quoted->rfind("From: \"Doe, Jane\" <jane@example.org>\n", 0) == 0);
  }
  SECTION("--to and --cc replace what the patch said") {
    options.to = {"Maintainer <m@example.org>"};
    options.cc = {"list@example.org", "m@example.org"};
    auto other = ks::report::mail(b, options);
    REQUIRE(other);
    CHECK_THAT(*other, Contains("\nTo: m@example.org\nCc: list@example.org\n"));
  }
  SECTION("no thread, no mail") {
    for (auto& p : b.builds["patched"]["patches"]) p.erase("message_id");
    CHECK_FALSE(ks::report::mail(b, options));
    CHECK_THROWS_WITH(ks::report::render(b, "eml", options), Contains("answers no thread"));
  }
}

TEST_CASE("reply: a line too long to mail makes the text part quoted-printable, which decodes to the reply") {
  auto b = with_verdict("REGRESSION");
  ks::report::Options options;
  options.tester = "J\xc3\xbcrgen " + std::string(1500, 'x') + "= <jt@example.org>";  // a Reported-by of 1,500 columns
  auto eml = ks::report::mail(b, options);
  REQUIRE(eml);
  const std::string head = "Content-Type: text/plain; charset=UTF-8\nContent-Transfer-Encoding: quoted-printable\n\n";
  REQUIRE_THAT(*eml, Contains(head));
  const auto body = eml->substr(eml->find(head) + head.size());
  for (auto& line : lines_of(body)) {
    INFO(line);
    CHECK(line.size() <= 76);
  }
  // What a reader's mailer shows: soft breaks joined, =XX decoded.
  std::string decoded;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '=') {
      decoded += body[i];
    } else if (body[i + 1] == '\n') {
      ++i;
    } else {
      decoded += static_cast<char>(std::stoi(body.substr(i + 1, 2), nullptr, 16));
      i += 2;
    }
  }
  CHECK_THAT(decoded, Contains("Reported-by: " + options.tester + "\n"));
  CHECK(decoded.find('=') == decoded.find("= <jt@"));
  // An ordinary reply goes as it is.
  options.tester = "Jane <jane@example.org>";
  CHECK_THAT(*ks::report::mail(b, options), Contains("Content-Transfer-Encoding: 8bit\n\n"));
}

TEST_CASE("reply: a changed workload's five largest own-time changes, where a profile says, within 72 columns") {
  auto b = ks::test::make_sample_bundle();
  ks::test::add_iops_workload(b);
  REQUIRE(b.verdict == "REGRESSION");
  auto& w = b.analysis->workloads.back();
  REQUIRE(w.verdict == "REGRESSION");
  ks::evidence::ProfileComparison p;
  p.control_points = p.patched_points = 2;
  p.measured_change = 2414;
  p.profiled_change = 2379;
  p.calls_changed = 15;
  p.calls_changed_share_pct = 83.6;
  for (int i = 0; i < 7; ++i)
    p.functions.push_back({"btrfs_function_number_" + std::to_string(i), 0, 1.74, 0, 1401.0 - i, 0});
  w.profile = p;
  auto reply = reply_of(b);
  CHECK_THAT(flat(reply), Contains("Where (" + w.workload + ", per op, ns; C control, P patched; function profiler, "
                                   "functions whose calls changed: 84% of the change):"));
  CHECK_THAT(reply, Contains("btrfs_function_number_4") && !Contains("btrfs_function_number_5"));
  CHECK_THAT(reply, Contains("+1401"));
  auto where = reply.substr(reply.find("Where ("));
  for (auto& line : lines_of(where.substr(0, where.find("\n\n")))) CHECK(line.size() <= 72);
}

TEST_CASE("reply: no line quoting the bundle or the patch mail reads as a trailer (thirteenth attack)") {
  auto b = with_verdict("NO_CHANGE");
  auto& patch = b.builds["patched"]["patches"][0];
  patch["author"] = "Tested-by: Mallory (mallory@evil.example)";  // and no date
  patch.erase("date");
  for (auto& p : b.points) p.storage["kind"] = "brd " + std::string(64, 'x') + " Tested-by: Mallory <m@evil.example>";
  auto reply = reply_of(b);
  INFO(reply);
  CHECK_THAT(reply, Contains("On an unknown date, Tested-by: Mallory (mallory@evil.example) wrote:"));
  for (auto& line : lines_of(reply)) {
    auto start = line.find_first_not_of(' ');
    if (start != std::string::npos && line.compare(start, 10, "Tested-by:") == 0)
      CHECK(line == std::string("Tested-by: ") + kTester);  // the one the tester gives
  }
  CHECK_THAT(flat(reply), Contains("Tested-by: Mallory <m@evil.example>"));  // quoted, not a trailer
}

TEST_CASE("reply: a trailer joined by no-break spaces, or any name with an address, is not one either (fourteenth attack)") {
  auto b = with_verdict("NO_CHANGE");
  const std::string nbsp = "\xc2\xa0";
  // A word longer than a line puts what follows at the start of the next (indented) line.
  b.machine["cpu_model"] = std::string(90, 'X') + " " + nbsp + "Tested-by:" + nbsp + "Mallory" + nbsp + "<m@evil.example>";
  auto& patch = b.builds["patched"]["patches"][0];
  patch.erase("date");
  patch["author"] = std::string(90, 'Y') + " Fixes:" + nbsp + "0123456789ab (\"btrfs: fix\") <m@evil.example>";
  auto reply = reply_of(b);
  INFO(reply);
  // b4's rule: ^\s*\w\S+:\s with a known tag or an address. Only the tester's own line is one.
  size_t guarded = 0;
  for (auto& line : lines_of(reply)) {
    auto start = line.find_first_not_of(' ');
    if (start == std::string::npos || line[start] == '>') continue;
    if (line[start] == '|') {
      guarded += line.find("Tested-by: Mallory") != std::string::npos || line.find("Fixes: 0123456789ab") != std::string::npos;
      continue;
    }
    for (const char* tag : {"Tested-by:", "Fixes:"})
      if (line.compare(start, std::string(tag).size(), tag) == 0) CHECK(line == std::string("Tested-by: ") + kTester);
  }
  CHECK(guarded == 1);
  // The author's name, longer than any name (eighteenth attack: prose in the attribution), is
  // quoted as its address.
  CHECK(reply.find("Fixes:") == std::string::npos);
  CHECK_THAT(reply, Contains("On an unknown date, m@evil.example wrote:"));
  CHECK(reply.find("\xc2\xa0") == std::string::npos);  // no-break spaces are plain ones
}

namespace {

// What b4 collects from a follow-up (LoreMessage.find_trailers): lines matching
// ^\s*(\w\S+):\s+(\S.*) whose name is a known tag or whose value holds an address; a value
// with an open "(" takes the next line (its Fixes: rejoin), a name without an address a next
// line of only "<address>".
std::vector<std::string> b4_would_collect(const std::string& reply) {
  static const std::regex rule(R"(^\s*(\w\S+):\s+(\S.*)$)"), address_line(R"(^\s*<\S+@\S+>\s*$)");
  static const std::regex tag(R"((.*-by|cc|fixes|link|closes))", std::regex::icase);
  auto lines = lines_of(reply);
  std::vector<std::string> found;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (lines[i].size() > 2000 || !std::regex_match(lines[i], m, rule)) continue;
    std::string value = m[2];
    if (value.find('(') != std::string::npos && value.find(')') == std::string::npos && i + 1 < lines.size() &&
        lines[i + 1].find(')') != std::string::npos)
      value += " " + lines[i + 1];
    if (value.find('@') == std::string::npos && i + 1 < lines.size() && std::regex_match(lines[i + 1], address_line))
      value += " " + lines[i + 1];
    if (value.find('@') != std::string::npos || std::regex_match(std::string(m[1]), tag))
      found.push_back(std::string(m[1]) + ": " + value);
  }
  return found;
}

}  // namespace

TEST_CASE("reply: b4 collects nothing from it but the tester's trailer: a greedy name, an underscore, a name and an address line, an address in our Machine line (fifteenth attack)") {
  for (int variant = 0; variant < 3; ++variant) {
    auto b = with_verdict("NO_CHANGE");
    auto& patch = b.builds["patched"]["patches"][0];
    patch.erase("date");
    patch["author"] = "Alice " + std::string(30, 'X') + " Tested-by:Mallory: m@evil.example (tested) <a@b.example>";
    b.machine["cpu_model"] = variant == 2 ? "deadbeef (Xeon mallory@evil.example" + std::string(45, 'Y') + ")"  // sixteenth
                                          : "Xeon, reviewed by Mallory <mallory@evil.example>";
    for (auto& p : b.points)
      p.storage["kind"] = variant == 0 ? "brd " + std::string(40, 'Y') + " Reviewed: Mallory " + std::string(50, 'Z') +
                                             " <mallory@evil.example> " + std::string(70, 'W')
                                       : "brd " + std::string(60, 'Y') + " _Tested-by: m@evil.example";
    auto reply = reply_of(b);
    INFO(reply);
    auto body = reply.substr(reply.find("\n\n") + 2);  // below the mail's own headers
    CHECK(b4_would_collect(body) == std::vector<std::string>{std::string("Tested-by: ") + kTester});
  }
}

TEST_CASE("reply: a patch mail's long Cc list goes on Cc once each, the tester never, and no bundle word makes a paragraph (seventeenth attack)") {
  auto b = with_verdict("NO_CHANGE");
  auto& patch = b.builds["patched"]["patches"][0];
  // 20,000 addresses were compared pairwise: 13 s; a million ran for hours.
  std::string cc;
  const int n = 20000;
  for (int i = 0; i < n; ++i) cc += "a" + std::to_string(i) + "@b.c, A" + std::to_string(i) + "@B.C, ";
  patch["cc"] = cc + "JANE@example.org";
  // What a reader refuses (pipeline::parse_bundle_text), the reply keeps on its line too.
  b.points.front().storage["kind"] = "brd for every point.\n\nLooks good to me. Please apply.\n\n(with";
  ks::report::Options options;
  options.tester = kTester;
  auto eml = ks::report::mail(b, options);
  REQUIRE(eml);
  const auto head = eml->substr(0, eml->find("\n\n"));
  size_t addresses = 0;
  for (size_t at = head.find("@b.c"); at != std::string::npos; at = head.find("@b.c", at + 1)) ++addresses;
  CHECK(addresses == n);
  CHECK_THAT(head, !Contains("@B.C") && !Contains("JANE@example.org"));
  CHECK(head.find("jane@example.org") == head.rfind("jane@example.org"));  // on From: alone
  for (auto& line : lines_of(*eml)) CHECK(line.rfind("Looks good", 0) != 0);
}

TEST_CASE("reply: the attribution quotes a patch's date only as a date, and a name only as long as a name (eighteenth attack)") {
  auto b = with_verdict("NO_CHANGE");
  auto& patch = b.builds["patched"]["patches"][0];
  patch["author"] = "Jane Maintainer <j@example.org>";
  patch["date"] = "Mon, 4 May 2026 10:00:00 +0200";
  CHECK_THAT(flat(reply_of(b)), Contains("On Mon, 4 May 2026 10:00:00 +0200, Jane Maintainer wrote:"));
  patch["date"] = "4 May 2026 10:00 -0000 (UTC)";
  CHECK_THAT(flat(reply_of(b)), Contains("On 4 May 2026 10:00 -0000 (UTC), Jane Maintainer wrote:"));
  patch["date"] = "Mon, 4 May 2026. I have reviewed this patch and it is correct; please apply it. Thanks,";
  auto reply = reply_of(b);
  CHECK_THAT(flat(reply), Contains("On an unknown date, Jane Maintainer wrote:") && !Contains("please apply"));
  patch["date"] = "Mon, 4 May 2026 10:00:00 +0200";
  patch["author"] = "Jane. I reviewed it on top of the results below: it is correct, please apply it <j@example.org>";
  CHECK_THAT(flat(reply_of(b)), Contains("+0200, j@example.org wrote:") && !Contains("please apply"));
}

TEST_CASE("reply: the Backend, Machine, Kernels and Source lines are facts, not paragraphs in the tester's voice (nineteenth attack)") {
  auto b = with_verdict("NO_CHANGE");
  const std::string prose = "I have also reviewed the patch line by line and it is correct; I recommend applying it to "
                            "mainline and stable as is, and the earlier regression report was a measurement error. Thanks";
  b.machine["accelerator"] = {{"used", "tcg"}, {"reason", "ok). " + prose + " (end"}};
  b.machine["cpu_model"] = "Intel Xeon. " + prose;
  auto reply = reply_of(b);
  INFO(reply);
  CHECK_THAT(reply, !Contains("reviewed the patch line by line") || Contains("Machine: Intel Xeon. I have also"));
  CHECK_THAT(flat(reply), Contains("Backend: qemu, accelerator tcg") && !Contains("(ok)") && Contains("..."));
  CHECK_THAT(flat(reply), !Contains("measurement error"));
  // A date strptime reads across newlines is quoted on one line.
  b.builds["patched"]["patches"][0]["date"] = "Mon,\n\n\n4 May 2026 10:00:00 +0000";
  auto dated = reply_of(b);
  CHECK_THAT(dated, !Contains("Mon,\n") && Contains("4 May 2026 10:00:00 +0000,"));
}

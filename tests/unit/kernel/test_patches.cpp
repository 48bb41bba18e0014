#include <catch2/catch.hpp>

#include "kernel/patches.hpp"
#include "support/paths.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"

using namespace ks::kernel;

namespace {

const char* kDiff =
    "diff --git a/fs/btrfs/super.c b/fs/btrfs/super.c\n"
    "index a744da3..6dfc6f8 100644\n"
    "--- a/fs/btrfs/super.c\n"
    "+++ b/fs/btrfs/super.c\n"
    "@@ -1,3 +1,3 @@\n"
    " a\n"
    "-b\n"
    "+c\n"
    " d\n";

std::string message(const std::string& subject, const std::string& id, const std::string& body,
                    const std::string& extra_headers = "") {
  return "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
         "From: Jane Dev <jane@example.org>\n"
         "Date: Mon, 4 May 2026 10:00:00 +0000\n"
         "Subject: " + subject + "\n" +
         (id.empty() ? "" : "Message-ID: " + id + "\n") + extra_headers + "\n" + body + "\n";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a plain diff is one patch named by its description or file", "[build][patches]") {
  std::string text = std::string("Make b into c.\n\n") + kDiff;
  CHECK(!is_mailbox(text));
  auto set = parse_patch_file(text, "fix.diff");
  REQUIRE(set.patches.size() == 1);
  auto& p = set.patches[0];
  CHECK(p.subject == "Make b into c.");
  CHECK(p.message_id.empty());
  CHECK(p.sha256 == ks::sha256_hex(text));
  CHECK(p.file_sha256 == p.sha256);
  CHECK(p.text == text);
  CHECK(p.files == std::vector<std::string>{"fs/btrfs/super.c"});

  auto bare = parse_patch_file(kDiff, "dir/bare.patch");
  CHECK(bare.patches[0].subject == "bare.patch");
}

TEST_CASE("a file without a diff is refused", "[build][patches]") {
  CHECK_THROWS_AS(parse_patch_file("just some words\n", "notes.txt"), ks::UserError);
  CHECK_THROWS_AS(parse_patch_file(message("Re: [PATCH] x", "<a@b>", "Looks good.\n"), "re.mbox"),
                  ks::UserError);
}

TEST_CASE("the shipped patches are format-patch mails with a header", "[build][patches]") {
  for (auto name : {"btrfs-drop-sb-nosec.patch", "btrfs-sync-data-csum.patch",
                    "btrfs-noop-comment.patch"}) {
    auto path = ks::test::source_dir() / "kernel-patches" / name;
    auto text = ks::read_file(path);
    CHECK(is_mailbox(text));
    auto set = parse_patch_file(text, name);
    REQUIRE(set.patches.size() == 1);
    auto& p = set.patches[0];
    CHECK(ks::starts_with(p.subject, "[PATCH] btrfs: "));
    CHECK(p.author == "ksandwich test patches <ksandwich@localhost.invalid>");
    CHECK(!p.date.empty());
    CHECK(p.file_sha256 == ks::sha256_hex(text));
    CHECK(contains(p.text, "What it changes"));
    CHECK(contains(p.text, "Which workloads should move"));
    CHECK(!p.files.empty());
  }
  auto nosec = parse_patch_file(
      ks::read_file(ks::test::source_dir() / "kernel-patches/btrfs-drop-sb-nosec.patch"), "x");
  CHECK(nosec.patches[0].subject == "[PATCH] btrfs: drop SB_NOSEC from the superblock flags");
  CHECK(nosec.patches[0].files == std::vector<std::string>{"fs/btrfs/super.c"});
}

TEST_CASE("a saved series applies in [n/m] order, skipping the cover and replies",
          "[build][patches]") {
  std::string mbox =
      message("[PATCH v2 2/2] btrfs: second", "<p2@example.org>", std::string("Two.\n---\n") + kDiff) +
      message("[PATCH v2 0/2] btrfs: a series", "<cover@example.org>", "Cover text.\n") +
      message("Re: [PATCH v2 1/2] btrfs: first", "<reply@example.org>",
              std::string("> quoted\n") + kDiff) +
      message("[PATCH v2 1/2] btrfs: first", "<p1@example.org>", std::string("One.\n---\n") + kDiff);
  CHECK(is_mailbox(mbox));
  auto set = parse_patch_file(mbox, "series.mbox");
  REQUIRE(set.patches.size() == 2);
  CHECK(set.patches[0].subject == "[PATCH v2 1/2] btrfs: first");
  CHECK(set.patches[0].message_id == "<p1@example.org>");
  CHECK(set.patches[0].index == 1);
  CHECK(set.patches[0].count == 2);
  CHECK(set.patches[1].subject == "[PATCH v2 2/2] btrfs: second");
  CHECK(set.patches[1].message_id == "<p2@example.org>");
  CHECK(set.patches[0].author == "Jane Dev <jane@example.org>");
  CHECK(set.patches[0].date == "Mon, 4 May 2026 10:00:00 +0000");
  CHECK(set.patches[0].file_sha256 == ks::sha256_hex(mbox));
  CHECK(set.patches[0].sha256 == ks::sha256_hex(set.patches[0].text));
  CHECK(set.patches[0].sha256 != set.patches[1].sha256);
  CHECK(contains(set.patches[0].text, "One."));
  CHECK(!contains(set.patches[0].text, "Message-ID"));  // the body, not the headers
  REQUIRE(set.cover);
  CHECK(set.cover->message_id == "<cover@example.org>");
  CHECK(set.cover->subject == "[PATCH v2 0/2] btrfs: a series");
}

TEST_CASE("two versions of one patch in a mailbox are refused", "[build][patches]") {
  std::string mbox = message("[PATCH 1/2] a", "<a@x>", kDiff) + message("[PATCH 1/2] a", "<b@x>", kDiff);
  CHECK_THROWS_AS(parse_patch_file(mbox, "twice.mbox"), ks::UserError);
  // Unnumbered: a thread holding a patch and its v2 would apply both, one on the other.
  std::string thread = message("[PATCH] a", "<a@x>", kDiff) + message("[PATCH v2] a", "<b@x>", kDiff);
  CHECK_THROWS_WITH(parse_patch_file(thread, "t.mbox"), Catch::Contains("holds versions 1 and 2"));
  CHECK(parse_patch_file(select_series(thread, "<b@x>", "t.mbox"), "t").patches.size() == 1);
}

TEST_CASE("mail headers: folding, encoded words, quoted-printable, mboxrd", "[build][patches]") {
  CHECK(decode_header_words("=?UTF-8?q?Ren=C3=A9_Dupont?= <r@x.org>") == "Ren\xC3\xA9 Dupont <r@x.org>");
  CHECK(decode_header_words("=?utf-8?B?SsO2cmc=?= Roedel") == "J\xC3\xB6rg Roedel");
  CHECK(decode_header_words("=?UTF-8?q?a?= =?UTF-8?q?b?=") == "ab");
  CHECK(decode_header_words("plain text") == "plain text");

  std::string body = std::string("A line with =3D and a soft=\n break.\n>From the list.\n") + kDiff;
  std::string mbox =
      "From mboxrd@z Thu Jan  1 00:00:00 1970\n"
      "From: =?UTF-8?q?Ren=C3=A9?= <r@x.org>\n"
      "Subject: [PATCH] btrfs: a subject that was\n"
      " folded over two lines\n"
      "Message-Id: <folded@x.org>\n"
      "Content-Type: text/plain; charset=UTF-8\n"
      "Content-Transfer-Encoding: quoted-printable\n"
      "\n" + body;
  auto set = parse_patch_file(mbox, "qp.mbox");
  REQUIRE(set.patches.size() == 1);
  auto& p = set.patches[0];
  CHECK(p.subject == "[PATCH] btrfs: a subject that was folded over two lines");
  CHECK(p.message_id == "<folded@x.org>");
  CHECK(p.author == "Ren\xC3\xA9 <r@x.org>");
  CHECK(contains(p.text, "A line with = and a soft break."));
  CHECK(contains(p.text, "\nFrom the list."));  // mboxrd ">From " unescaped
  CHECK(p.files == std::vector<std::string>{"fs/btrfs/super.c"});
}

TEST_CASE("touched_files handles new and deleted files", "[build][patches]") {
  std::string diff =
      "--- /dev/null\n+++ b/fs/new.c\n@@ -0,0 +1 @@\n+x\n"
      "--- a/fs/old.c\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n";
  CHECK(touched_files(diff) == std::vector<std::string>{"fs/new.c", "fs/old.c"});
  std::string rename =
      "diff --git a/fs/btrfs/a.c b/fs/btrfs/b.c\n"
      "similarity index 100%\n"
      "rename from fs/btrfs/a.c\n"
      "rename to fs/btrfs/b.c\n";
  CHECK(touched_files(rename) == std::vector<std::string>{"fs/btrfs/b.c", "fs/btrfs/a.c"});
}

TEST_CASE("touched_files reads git's quoted names: octal bytes, escapes, spaces, a name that leaves the tree",
          "[build][patches]") {
  // What `git diff` prints for fs/bär.c (core.quotePath), a name with a tab and a quote, and
  // one with a space (quoted only when it holds a special character).
  std::string diff =
      "diff --git \"a/fs/b\\303\\244r.c\" \"b/fs/b\\303\\244r.c\"\n"
      "--- \"a/fs/b\\303\\244r.c\"\n+++ \"b/fs/b\\303\\244r.c\"\n@@ -1 +1 @@\n-x\n+y\n"
      "diff --git \"a/fs/t\\tq\\\"\" \"b/fs/t\\tq\\\"\"\n"
      "--- a/fs/two words.c\t2024-01-01\n+++ b/fs/two words.c\t2024-01-01\n@@ -1 +1 @@\n-x\n+y\n";
  CHECK(touched_files(diff) == std::vector<std::string>{"fs/b\xC3\xA4r.c", "fs/t\tq\"", "fs/two words.c"});
  // Escaped dots are dots: the name leaves the tree, and the patch check must see that.
  CHECK(touched_files("--- \"a/\\056\\056/X\"\n+++ \"b/\\056\\056/X\"\n") == std::vector<std::string>{"../X"});
  // A quote that never closes names nothing.
  CHECK(touched_files("diff --git \"a/x b/x\n").empty());
  // Unquoted names with spaces (git quotes only special characters): split where both match.
  CHECK(touched_files("diff --git a/fs/two words.c b/fs/two words.c\nnew file mode 100644\n") ==
        std::vector<std::string>{"fs/two words.c"});
  CHECK(touched_files("diff --git a/x b/y\n") == std::vector<std::string>{"y", "x"});
}

TEST_CASE("describe_patch_failure names the file and the hunk", "[build][patches]") {
  auto hunk = describe_patch_failure(
      "checking file fs/btrfs/super.c\nHunk #2 FAILED at 1817.\n1 out of 2 hunks FAILED\n");
  CHECK(hunk == "hunk #2 of fs/btrfs/super.c does not apply (expected at line 1817)");

  auto missing = describe_patch_failure(
      "can't find file to patch at input line 5\n"
      "Perhaps you used the wrong -p or --strip option?\n"
      "The text leading up to this was:\n"
      "--------------------------\n"
      "|--- a/fs/btrfs/nothere.c\n"
      "|+++ b/fs/btrfs/nothere.c\n"
      "--------------------------\n"
      "No file to patch.  Skipping patch.\n");
  CHECK(missing == "fs/btrfs/nothere.c does not exist in the source");

  auto reversed = describe_patch_failure(
      "checking file fs/btrfs/super.c\n"
      "Reversed (or previously applied) patch detected!  Skipping patch.\n");
  CHECK(reversed == "fs/btrfs/super.c: already applied (or reversed)");

  CHECK(describe_patch_failure("patch: **** Only garbage was found in the patch input.\n") ==
        "no diff found in it");
  CHECK(describe_patch_failure("") == "patch failed without saying why");
}

TEST_CASE("subject numbering that no series has is no position, and a huge bracket is no crash",
          "[build][patches]") {
  // Subjects in mailbox order; the patches' subjects in the order they apply.
  auto order = [](std::vector<std::string> subjects) {
    std::string mbox;
    for (size_t i = 0; i < subjects.size(); ++i)
      mbox += message(subjects[i], "<" + std::to_string(i) + "@x>", std::string("x\n---\n") + kDiff);
    std::vector<std::string> out;
    for (auto& p : parse_patch_file(mbox, "series.mbox").patches) out.push_back(p.subject.substr(0, 20));
    return out;
  };
  using V = std::vector<std::string>;
  CHECK(order({"[PATCH v3 2/2 ] b", "[PATCH v3 1/2 ] a"}) == V{"[PATCH v3 1/2 ] a", "[PATCH v3 2/2 ] b"});
  // A number that fits no int, or one that does not start a word, is no position: mailbox
  // order among unnumbered patches, and refused beside numbered ones (which patch is missing?).
  CHECK(order({"[PATCH 99999999999999999999/2] b", "[PATCHv2/2] a"}) ==
        V{std::string("[PATCH 99999999999999999999/2] b").substr(0, 20), "[PATCHv2/2] a"});
  CHECK_THROWS_WITH(order({"[PATCH 99999999999999999999/2] b", "[PATCH 1/2] a"}), Catch::Contains("not all numbered k/N"));
  CHECK_THROWS_WITH(order({"[PATCHv2/2] b", "[PATCH 1/2] a"}), Catch::Contains("not all numbered k/N"));
  CHECK_THROWS_WITH(order({"[PATCH -1/2] b", "[PATCH 2/2] a"}), Catch::Contains("not all numbered k/N"));
  const std::string open_bracket = "[" + std::string(200000, 'x');
  CHECK(order({open_bracket + " 2/2] b", "[PATCH 1/2] a"}) == V{"[PATCH 1/2] a", open_bracket.substr(0, 20)});
  CHECK_THROWS_WITH(order({open_bracket, "[PATCH 1/2] a"}), Catch::Contains("not all numbered k/N"));
}

TEST_CASE("hostile mail: huge quote runs, diff headers, encoded words and boundaries parse without a crash",
          "[build][patches]") {
  const std::string big(200000, 'a');
  // 40,000 '>' before "From ": one level unescaped, the rest kept.
  auto quoted = parse_patch_file(message("[PATCH] a", "<q@x>", std::string(40000, '>') + "From x\n---\n" + kDiff),
                                 "quotes.mbox");
  CHECK(contains(quoted.patches.at(0).text, std::string(39999, '>') + "From x\n"));
  CHECK(!contains(quoted.patches.at(0).text, std::string(40000, '>')));
  // A 200,000-character path in a diff --git line is a (long) path, not a crash.
  auto files = touched_files("diff --git a/" + big + " b/" + big + "\n");
  CHECK(files == std::vector<std::string>{big});
  // An encoded word with a 200,000-byte payload, and one that never closes.
  CHECK(decode_header_words("=?utf-8?q?" + big + "?=") == big);
  CHECK(decode_header_words("=?utf-8?q?" + big) == "=?utf-8?q?" + big);
  // A multipart mail whose boundary is 200,000 characters.
  std::string mime = message("[PATCH] m", "<m@x>",
                             "--" + big + "\nContent-Type: text/plain\n\nBody.\n---\n" + kDiff + "--" + big + "--\n",
                             "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"" + big + "\"\n");
  auto set = parse_patch_file(mime, "mime.mbox");
  CHECK(contains(set.patches.at(0).text, "Body."));
}

TEST_CASE("hostile mail, second attack: deep MIME nesting and a hunk line of 200,000 digits",
          "[build][patches]") {
  // 4,000 nested multiparts: each level used to copy its parts (2.2 GB); now parts nested
  // deeper than a mail ever does are not looked into, and the diff at the bottom is not found.
  std::string body, closing;
  for (int i = 0; i < 4000; ++i) {
    const auto b = "b" + std::to_string(i);
    body += "--" + (i == 0 ? std::string("b") : "b" + std::to_string(i - 1)) + "\nContent-Type: multipart/mixed; boundary=\"" + b + "\"\n\n";
    closing = "--" + b + "--\n" + closing;
  }
  auto nested = message("[PATCH] deep", "<d@x>", body + "--b3999\nContent-Type: text/plain\n\n" + kDiff + closing,
                        "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b\"\n");
  CHECK_THROWS_AS(parse_patch_file(nested, "nested.mbox"), ks::UserError);  // no diff within reach
  // Three multipart levels, as real mail nests them at most (signed around mixed around the
  // text): the diff is found. Four are not looked into (twelfth attack: eight levels of a
  // 16 MB part took 730 MB).
  auto levels = [](int inner) {
    std::string shallow, shallow_closing;
    for (int i = 0; i < inner; ++i) {
      shallow += "--b" + std::string(i == 0 ? "" : std::to_string(i - 1)) + "\nContent-Type: multipart/mixed; boundary=\"b" +
                 std::to_string(i) + "\"\n\n";
      shallow_closing = "--b" + std::to_string(i) + "--\n" + shallow_closing;
    }
    return message("[PATCH] shallow", "<s@x>",
                   shallow + "--b" + std::to_string(inner - 1) + "\nContent-Type: text/plain\n\n" + kDiff + shallow_closing,
                   "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b\"\n");
  };
  auto found = parse_patch_file(levels(2), "shallow.mbox");
  REQUIRE(found.patches.size() == 1);
  CHECK(found.patches[0].files == std::vector<std::string>{"fs/btrfs/super.c"});
  CHECK_THROWS_AS(parse_patch_file(levels(3), "deeper.mbox"), ks::UserError);

  // patch echoes the mail's text: a "Hunk #" line of 200,000 digits overflowed std::regex.
  auto output = "patching file fs/btrfs/super.c\nHunk #" + std::string(200000, '9') + "\nHunk #2 FAILED at 120.\n";
  CHECK_THAT(describe_patch_failure(output), Catch::Contains("hunk #2 of fs/btrfs/super.c does not apply (expected at line 120)"));

}

TEST_CASE("header values become valid UTF-8: a declared charset converted, undeclared 8-bit bytes read as ISO-8859-1",
          "[build][patches]") {
  CHECK(decode_header_words("=?iso-8859-1?q?caf=E9?=") == "caf\xc3\xa9");
  CHECK(decode_header_words("=?ISO-8859-15?Q?=A4?=") == "\xe2\x82\xac");  // the euro sign of Latin-9
  CHECK(decode_header_words("=?UTF-8?q?Ren=C3=A9?=") == "Ren\xc3\xa9");
  CHECK(decode_header_words("Ren\xe9 M\xfcller") == "Ren\xc3\xa9 M\xc3\xbcller");  // raw Latin-1
  CHECK(decode_header_words("=?x-unknown?q?a=FF?=") == "a\xc3\xbf");
  // What series writes as JSON: the whole mail, subject and author, parses and dumps.
  auto set = parse_patch_file(message("[PATCH] =?iso-8859-1?q?btrfs:_caf=E9?=", "<iso@x>", kDiff,
                                      "Cc: =?iso-8859-1?q?Ren=E9?= <r@x>\n"),
                              "iso.mbox");
  REQUIRE(set.patches.size() == 1);
  CHECK(set.patches[0].subject == "[PATCH] btrfs: caf\xc3\xa9");
  CHECK_NOTHROW(nlohmann::json(set.patches[0].subject).dump());
}

TEST_CASE("select_series picks one version of a series out of a saved thread by any of its Message-IDs",
          "[build][patches]") {
  auto reply_to = [](const std::string& parent, const std::string& refs) {
    return "In-Reply-To: " + parent + "\nReferences: " + refs + "\n";
  };
  const std::string body = std::string("Change.\n---\n") + kDiff;
  // v1 with a cover; v2 sent in reply to v1's cover; reviews (with a diff of their own);
  // another thread's patch.
  std::string thread =
      message("[PATCH 0/2] btrfs: a series", "<c1@x>", "Cover.\n") +
      message("[PATCH 1/2] btrfs: first", "<p1@x>", body, reply_to("<c1@x>", "<c1@x>")) +
      message("[PATCH 2/2] btrfs: second", "<p2@x>", body, reply_to("<c1@x>", "<c1@x>")) +
      message("Re: [PATCH 1/2] btrfs: first", "<r1@x>", "How about:\n" + std::string(kDiff),
              reply_to("<p1@x>", "<c1@x> <p1@x>")) +
      message("[PATCH v2 0/2] btrfs: a series", "<c2@x>", "Cover v2.\n", reply_to("<c1@x>", "<c1@x>")) +
      message("[PATCH v2 1/2] btrfs: first", "<q1@x>", body, reply_to("<c2@x>", "<c1@x> <c2@x>")) +
      message("[PATCH v2 2/2] btrfs: second", "<q2@x>", body, reply_to("<c2@x>", "<c1@x>\n <c2@x>")) +
      message("[PATCH] btrfs: unrelated", "<u@x>", body);
  CHECK_THROWS_AS(parse_patch_file(thread, "t.mbox"), ks::UserError);  // two versions in one file

  auto ids_of = [](const std::string& mbox) {
    std::vector<std::string> ids;
    for (auto& p : parse_patch_file(mbox, "sel").patches) ids.push_back(p.message_id);
    return ids;
  };
  const std::vector<std::string> v1{"<p1@x>", "<p2@x>"}, v2{"<q1@x>", "<q2@x>"};
  CHECK(ids_of(select_series(thread, "<c2@x>", "t.mbox")) == v2);   // the cover
  CHECK(ids_of(select_series(thread, "q2@x", "t.mbox")) == v2);     // a patch, no brackets
  CHECK(ids_of(select_series(thread, "<c1@x>", "t.mbox")) == v1);   // v2 hangs below v1's cover: left out
  CHECK(ids_of(select_series(thread, "https://lore.kernel.org/linux-btrfs/p2%40x/T/#u", "t.mbox")) == v1);
  CHECK(ids_of(select_series(thread, "id:u@x", "t.mbox")) == std::vector<std::string>{"<u@x>"});
  auto cover = parse_patch_file(select_series(thread, "<q1@x>", "t.mbox"), "sel").cover;
  REQUIRE(cover);
  CHECK(cover->message_id == "<c2@x>");

  // Deep threading without a cover (git send-email --chain-reply-to): each patch below the last.
  std::string chain = message("[PATCH 1/3] a", "<a1@x>", body) +
                      message("[PATCH 2/3] b", "<a2@x>", body, reply_to("<a1@x>", "<a1@x>")) +
                      message("[PATCH 3/3] c", "<a3@x>", body, reply_to("<a2@x>", "<a1@x> <a2@x>"));
  CHECK(ids_of(select_series(chain, "<a3@x>", "c.mbox")) == std::vector<std::string>{"<a1@x>", "<a2@x>", "<a3@x>"});

  // What cannot be picked is a clear error naming what is wrong.
  auto message_of = [](auto&& f) {
    try {
      f();
    } catch (const ks::UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(contains(message_of([&] { select_series(thread, "<nope@x>", "t.mbox"); }), "none of its 8 messages"));
  CHECK(contains(message_of([&] { select_series(thread, "<r1@x>", "t.mbox"); }), "is a reply"));
  CHECK(contains(message_of([&] { select_series(thread, "  ", "t.mbox"); }), "names no Message-ID"));
  std::string partial = message("[PATCH 1/3] a", "<a1@x>", body) +
                        message("[PATCH 3/3] c", "<a3@x>", body, reply_to("<a1@x>", "<a1@x>"));
  CHECK(contains(message_of([&] { select_series(partial, "<a3@x>", "p.mbox"); }), "lacks patch 2/3"));
}

TEST_CASE("select_series in the corners of real threads: reviewers' patches, PATCHv2, RESEND, References only",
          "[build][patches]") {
  const std::string body = std::string("Change.\n---\n") + kDiff;
  auto below = [](const std::string& parent) { return "In-Reply-To: " + parent + "\nReferences: " + parent + "\n"; };
  auto ids_of = [](const std::string& mbox) {
    std::vector<std::string> ids;
    for (auto& p : parse_patch_file(mbox, "sel").patches) ids.push_back(p.message_id);
    return ids;
  };
  // A reviewer's alternative [PATCH] posted below an unnumbered patch is not part of it.
  std::string review = message("[PATCH] f: d", "<p@x>", body) +
                       message("[PATCH] f: another way", "<alt@x>", body, below("<p@x>"));
  CHECK(ids_of(select_series(review, "p@x", "t")) == std::vector<std::string>{"<p@x>"});
  // Versions spelt without a space, or with a point release, are versions.
  std::string glued = message("[PATCH] f: d", "<a@x>", body) + message("[PATCHv2] f: d", "<b@x>", body, below("<a@x>")) +
                      message("[PATCH v2.1] f: d", "<c@x>", body, below("<b@x>"));
  CHECK_THROWS_WITH(parse_patch_file(glued, "t"), Catch::Contains("holds versions 1 and 2"));
  CHECK(ids_of(select_series(glued, "<a@x>", "t")) == std::vector<std::string>{"<a@x>"});
  // A RESEND threaded below the original series is another series.
  std::string resend = message("[PATCH 1/1] f: d", "<o@x>", body) +
                       message("[RESEND PATCH 1/1] f: d", "<re@x>", body, below("<o@x>"));
  CHECK(ids_of(select_series(resend, "<o@x>", "t")) == std::vector<std::string>{"<o@x>"});
  CHECK(ids_of(select_series(resend, "<re@x>", "t")) == std::vector<std::string>{"<re@x>"});
  // Threaded by References alone (no In-Reply-To): up from 2/2 to the cover, then down.
  std::string refs = message("[PATCH 0/2] s", "<c@x>", "Cover.\n") +
                     message("[PATCH 1/2] a", "<1@x>", body, "References: <c@x>\n") +
                     message("[PATCH 2/2] b", "<2@x>", body, "References: <c@x>\n");
  CHECK(ids_of(select_series(refs, "<2@x>", "t")) == std::vector<std::string>{"<1@x>", "<2@x>"});
  // The id as a lore link in its other forms, and in another case when that is unique.
  for (auto given : {"https://lore.kernel.org/r/%3C2@x%3E", "https://lore.kernel.org/linux-btrfs/2@x#r",
                     "https://patch.msgid.link/2@x?x=1", "<2@X>"}) {
    INFO(given);
    CHECK(ids_of(select_series(refs, given, "t")) == std::vector<std::string>{"<1@x>", "<2@x>"});
  }
  CHECK_THROWS_WITH(select_series("\x1f\x8b\x08 rest", "<a@x>", "t.mbox.gz"), Catch::Contains("gzip-compressed"));
  // Two patches 1/2 of one version below one cover: named, not left to a later "twice".
  std::string twice = refs + message("[PATCH 1/2] a again", "<1b@x>", body, below("<c@x>"));
  CHECK_THROWS_WITH(select_series(twice, "<c@x>", "t"), Catch::Contains("two patches 1/2: <1@x> and <1b@x>"));
}

TEST_CASE("a MIME boundary is at most 70 characters (RFC 2046): a longer one is no boundary, so no line is compared with it (sixth attack)",
          "[build][patches]") {
  auto mail = [](const std::string& boundary) {
    return message("[PATCH] m", "<m@x>",
                   "--" + boundary + "\nContent-Type: text/plain\n\nBody.\n---\n" + kDiff + "--" + boundary + "--\n",
                   "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"" + boundary + "\"\n");
  };
  auto split = parse_patch_file(mail(std::string(70, 'b')), "70.mbox").patches.at(0).text;
  CHECK(contains(split, "Body."));
  CHECK(!contains(split, std::string(70, 'b')));  // the part, without its delimiters
  auto whole = parse_patch_file(mail(std::string(71, 'b')), "71.mbox").patches.at(0).text;
  CHECK(contains(whole, "--" + std::string(71, 'b') + "\nContent-Type: text/plain"));  // the body as it is
}

TEST_CASE("an encoded word's charset is a plain name: \"koi8-r//x\" is not converted, each suffix was one more open converter (eighth attack)",
          "[build][patches]") {
  CHECK(decode_header_words("=?koi8-r?q?=C1?=") == "\xd0\xb0");              // Cyrillic a
  CHECK(decode_header_words("=?koi8-r//TRANSLIT?q?=C1?=") == "\xc3\x81");    // read as ISO-8859-1
  std::string many;
  for (int i = 0; i < 40; ++i) many += "=?koi8-r//" + std::to_string(i) + "?q?=C1?= ";
  CHECK(decode_header_words(many) == [] {
    std::string s;
    for (int i = 0; i < 40; ++i) s += "\xc3\x81";
    return s + " ";  // the space after the last word stays
  }());
}

TEST_CASE("a patch file or mailbox of more than a million lines is refused before it is parsed: 4 MB of empty lines took 25 s (eleventh attack)",
          "[build][patches]") {
  auto mail = [](size_t blank_lines) {
    return message("[PATCH 1/1] btrfs: x", "<n@x>", "Body.\n" + std::string(blank_lines, '\n') + "---\n" + kDiff);
  };
  CHECK(parse_patch_file(mail(1000), "n.mbox").patches.size() == 1);
  CHECK_THROWS_WITH(parse_patch_file(mail(kMaxPatchLines), "n.mbox"), Catch::Contains("more than 1000000 lines"));
  CHECK_THROWS_WITH(select_series(mail(kMaxPatchLines), "<n@x>", "n.mbox"), Catch::Contains("more than 1000000 lines"));
  CHECK_THROWS_WITH(parse_patch_file(std::string(kMaxPatchBytes, 'x') + "\n" + kDiff, "big.diff"),
                    Catch::Contains("more than 16 MiB"));
  CHECK_THROWS_WITH(parse_patch_file(std::string(kMaxPatchLines + 1, '\n') + kDiff, "n.diff"),
                    Catch::Contains("more than 1000000 lines"));
}

// A patch series split into adjacent comparisons, on a real `git format-patch` mailbox
// made here from a three-commit history.
#include <catch2/catch.hpp>

#include "experiment/experiment.hpp"
#include "kernel/series.hpp"
#include "proc/runner.hpp"
#include "support/paths.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "util/files.hpp"

using namespace ks::kernel;
namespace fs = std::filesystem;

namespace {

std::string git(const fs::path& repo, std::vector<std::string> args) {
  args.insert(args.begin(), {"git", "-C", repo.string(), "-c", "user.name=Jane Dev", "-c",
                             "user.email=jane@example.org", "-c", "commit.gpgsign=false"});
  auto r = ks::proc::run_checked(ks::proc::command(args, std::chrono::seconds(30)));
  return r.out;
}

// base + three commits to fs/btrfs/reflink.c; the mailbox of the three, with a cover letter.
std::string format_patch_mbox(const fs::path& repo) {
  git(repo, {"init", "-q"});
  fs::create_directories(repo / "fs/btrfs");
  std::string text = "int a;\nint b;\nint c;\n";
  ks::write_file(repo / "fs/btrfs/reflink.c", text);
  git(repo, {"add", "."});
  git(repo, {"commit", "-q", "-m", "base"});
  const char* subjects[] = {"btrfs: take the lock earlier", "btrfs: check the range twice",
                            "btrfs: drop the extra flush"};
  for (int i = 0; i < 3; ++i) {
    text += "int patch" + std::to_string(i + 1) + ";\n";
    ks::write_file(repo / "fs/btrfs/reflink.c", text);
    git(repo, {"commit", "-q", "-a", "-m", subjects[i]});
  }
  return git(repo, {"format-patch", "--stdout", "--cover-letter", "--thread", "-3"});
}

nlohmann::json qemu_base() {
  auto base = nlohmann::json::parse(ks::read_file(ks::test::source_dir() / "configs/experiments/default.json"));
  base["arms"]["control"]["patches"] = {"/abs/base-fix.patch"};
  return base;
}

}  // namespace

TEST_CASE("a git format-patch series splits into one mailbox file per patch, in series order") {
  KS_SKIP_UNLESS(ks::proc::have_program("git"), "git is not installed (apt-get install git)");
  ks::test::TempDir tmp("ks-series");
  auto mbox = format_patch_mbox(tmp.path);
  auto files = split_series(mbox, "series.mbox");
  REQUIRE(files.size() == 3);  // the cover letter carries no diff
  CHECK(files[0].name == "0001-btrfs-take-the-lock-earlier.patch");
  CHECK(files[2].name == "0003-btrfs-drop-the-extra-flush.patch");
  auto original = parse_patch_file(mbox, "series.mbox");
  for (size_t i = 0; i < files.size(); ++i) {
    CHECK(files[i].index == static_cast<int>(i) + 1);
    // Each file is one patch whose diff and identity are the series' patch i.
    auto alone = parse_patch_file(files[i].text, files[i].name);
    REQUIRE(alone.patches.size() == 1);
    // The same diff (the text around it may differ by the blank lines a mailbox adds).
    auto diff = [](const std::string& t) { return ks::trim(t.substr(t.find("diff --git"))); };
    CHECK(diff(alone.patches[0].text) == diff(original.patches[i].text));
    CHECK(alone.patches[0].files == original.patches[i].files);
    CHECK(alone.patches[0].subject == original.patches[i].subject);
    CHECK(alone.patches[0].message_id == original.patches[i].message_id);
    CHECK(alone.patches[0].author == original.patches[i].author);
  }
  CHECK(files[1].subject.find("2/3] btrfs: check the range twice") != std::string::npos);
}

TEST_CASE("experiment k of a series compares base + patches 1..k-1 with base + patches 1..k") {
  std::vector<std::string> paths = {"/s/p/0001-a.patch", "/s/p/0002-b.patch", "/s/p/0003-c.patch"};
  auto base = qemu_base();
  auto first = series_experiment(base, paths, 1);
  CHECK(first["arms"]["control"]["patches"] == nlohmann::json{"/abs/base-fix.patch"});
  CHECK(first["arms"]["patched"]["patches"] == nlohmann::json{"/abs/base-fix.patch", "/s/p/0001-a.patch"});
  auto third = series_experiment(base, paths, 3);
  CHECK(third["arms"]["control"]["patches"] ==
        nlohmann::json{"/abs/base-fix.patch", "/s/p/0001-a.patch", "/s/p/0002-b.patch"});
  CHECK(third["arms"]["patched"]["patches"] ==
        nlohmann::json{"/abs/base-fix.patch", "/s/p/0001-a.patch", "/s/p/0002-b.patch", "/s/p/0003-c.patch"});
  // Adjacent: what step k's patched arm builds is step k+1's control.
  CHECK(series_experiment(base, paths, 2)["arms"]["patched"]["patches"] == third["arms"]["control"]["patches"]);
  CHECK(third["name"] == base["name"].get<std::string>() + "-p03");
  CHECK(third["workloads"] == base["workloads"]);
  // Every step is an experiment `run` accepts.
  for (int k = 1; k <= 3; ++k) CHECK_NOTHROW(ks::experiment::parse(series_experiment(base, paths, k)));
  CHECK_THROWS(series_experiment(base, paths, 4));
  CHECK_THROWS(series_experiment(base, paths, 0));
}

TEST_CASE("a step is patch k's only as series_experiment makes it: after step k-1, adding patch k's file (sixty-ninth attack)") {
  std::vector<std::string> paths = {"/s/p/0001-a.patch", "/s/p/0002-b.patch", "/s/p/0003-c.patch"};
  auto base = qemu_base();
  std::vector<nlohmann::json> steps;
  for (int k = 1; k <= 3; ++k) steps.push_back(series_experiment(base, paths, k));
  CHECK_FALSE(series_step_unlike(steps[0], nullptr, "patches/0001-a.patch"));
  CHECK_FALSE(series_step_unlike(steps[1], &steps[0], "patches/0002-b.patch"));
  CHECK_FALSE(series_step_unlike(steps[2], &steps[1], ""));  // a submit manifest names no file
  // Each forgery of step 2, and steps out of order.
  auto same = steps[1];
  same["arms"]["patched"]["patches"] = same["arms"]["control"]["patches"];
  CHECK(series_step_unlike(same, &steps[0], "patches/0002-b.patch"));
  auto skipped = steps[1];
  skipped["arms"]["control"]["patches"] = nlohmann::json{"/abs/base-fix.patch"};
  skipped["arms"]["patched"]["patches"] = nlohmann::json{"/abs/base-fix.patch", "/s/p/0002-b.patch"};
  CHECK(series_step_unlike(skipped, &steps[0], "patches/0002-b.patch"));
  CHECK(*series_step_unlike(steps[2], &steps[1], "patches/0002-b.patch") ==
        "the patch it adds is 0003-c.patch, not the step's 0002-b.patch");
  CHECK(series_step_unlike(steps[2], &steps[0], ""));
  auto unrelated = base;  // another experiment altogether: no patch added
  unrelated["arms"].erase("patched");
  CHECK(series_step_unlike(unrelated, &steps[0], ""));
  auto odd = steps[1];
  odd["arms"]["patched"]["patches"] = 5;
  CHECK(*series_step_unlike(odd, &steps[0], "") == "its arms' patches are not lists of files");
}

TEST_CASE("series experiment names sort in series order") {
  CHECK(series_experiment_name("x", 3, 5) == "x-p03");
  CHECK(series_experiment_name("x", 12, 120) == "x-p012");
}

TEST_CASE("a Subject whose encoded words decode to lines stays one header line: no hunk the mail lacks (issue 27 D10)") {
  // "x\n\ndiff --git a/Makefile b/Makefile\n--- a/Makefile\n+++ b/Makefile\n@@ -1 +1 @@\n-a\n+b\n", base64.
  const std::string smuggled =
      "eAoKZGlmZiAtLWdpdCBhL01ha2VmaWxlIGIvTWFrZWZpbGUKLS0tIGEvTWFrZWZpbGUKKysrIGIvTWFrZWZpbGUKQEAgLTEg"
      "KzEgQEAKLWEKK2IK";
  const std::string mail =
      "From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\n"
      "From: A Developer <dev@example.org>\n"
      "Date: Wed, 2 Dec 2026 10:00:00 +0000\n"
      "Subject: [PATCH 1/1] =?utf-8?b?" + smuggled + "?=\n"
      "Message-ID: <one@example.org>\n"
      "\n"
      "Fix it.\n"
      "---\n"
      "diff --git a/fs/btrfs/x.c b/fs/btrfs/x.c\n"
      "--- a/fs/btrfs/x.c\n"
      "+++ b/fs/btrfs/x.c\n"
      "@@ -1 +1 @@\n"
      "-old\n"
      "+new\n";
  auto files = split_series(mail, "smuggle.mbox");
  REQUIRE(files.size() == 1);
  CHECK(files[0].subject.find('\n') == std::string::npos);
  auto again = parse_patch_file(files[0].text, files[0].name);
  REQUIRE(again.patches.size() == 1);
  CHECK(again.patches[0].files == std::vector<std::string>{"fs/btrfs/x.c"});
  CHECK(again.patches[0].message_id == "<one@example.org>");
}

TEST_CASE("a plain diff's description line becomes a one-line subject, a CR inside it too (found by fuzz: mail)") {
  const std::string diff = "fix it\rBcc: someone@example.org\n"
                           "diff --git a/fs/btrfs/x.c b/fs/btrfs/x.c\n--- a/fs/btrfs/x.c\n+++ b/fs/btrfs/x.c\n"
                           "@@ -1 +1 @@\n-old\n+new\n";
  auto set = parse_patch_file(diff, "plain.diff");
  REQUIRE(set.patches.size() == 1);
  CHECK(set.patches[0].subject.find_first_of("\r\n") == std::string::npos);
  for (auto& file : split_series(diff, "plain.diff")) CHECK(file.subject.find_first_of("\r\n") == std::string::npos);
}

TEST_CASE("a mailbox of more patches than a series has is refused: experiment k lists patches 1..k") {
  std::string mbox;
  for (int i = 1; i <= 201; ++i)
    mbox += "From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\nFrom: A <a@x>\n"
            "Subject: [PATCH " + std::to_string(i) + "/201] p\nMessage-ID: <p" + std::to_string(i) + "@x>\n\n"
            "diff --git a/fs/btrfs/x.c b/fs/btrfs/x.c\n--- a/fs/btrfs/x.c\n+++ b/fs/btrfs/x.c\n@@ -1 +1 @@\n-a\n+b\n\n";
  CHECK_THROWS_WITH(split_series(mbox, "big.mbox"), Catch::Contains("201 patches; a series is at most 200"));
}

TEST_CASE("a series with a patch missing, or one whose diff is not found, is refused: each later step would measure a stack the series never had (fifty-seventh attack)") {
  auto mail = [](const std::string& subject, const std::string& body) {
    return "From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\nFrom: A <a@x>\nSubject: " + subject +
           "\nMessage-ID: <" + std::to_string(subject.size()) + "@x>\n\n" + body + "\n";
  };
  const std::string diff = "diff --git a/fs/btrfs/x.c b/fs/btrfs/x.c\n--- a/fs/btrfs/x.c\n+++ b/fs/btrfs/x.c\n@@ -1 +1 @@\n-a\n+b\n";
  CHECK_THROWS_WITH(split_series(mail("[PATCH 2/3] two", diff) + mail("[PATCH 3/3] three", diff), "gap.mbox"),
                    Catch::Contains("gap.mbox is not a whole series: it lacks patch 1/3"));
  CHECK_THROWS_WITH(split_series(mail("[PATCH 1/2] one", "the diff is in an attachment") + mail("[PATCH 2/2] two", diff), "mime.mbox"),
                    Catch::Contains("no diff was found in [PATCH 1/2] one"));
  CHECK_THROWS_WITH(split_series(mail("[PATCH 1/2] one", diff) + mail("[PATCH 2/3] two", diff), "totals.mbox"),
                    Catch::Contains("not all numbered k/N out of one N"));
  CHECK_THROWS_WITH(split_series(mail("[PATCH 1/2] one", diff) + mail("two", diff), "mixed.mbox"),
                    Catch::Contains("not all numbered k/N out of one N"));
  CHECK_THROWS_WITH(split_series(mail("[PATCH 1/0] one", diff) + mail("[PATCH 3/0] three", diff), "zero.mbox"),
                    Catch::Contains("not all numbered k/N out of one N"));
  // What run and build read (fifty-eighth attack): a run of a series, never one with a hole.
  CHECK_THROWS_WITH(parse_patch_file(mail("[PATCH 1/3] one", diff) + mail("[PATCH 3/3] three", diff), "hole.mbox"),
                    Catch::Contains("lacks patch 2/3 between 1/3 and 3/3"));
  CHECK(parse_patch_file(mail("[PATCH 2/3] two", diff) + mail("[PATCH 3/3] three", diff), "tail.mbox").patches.size() == 2);
  CHECK(parse_patch_file(mail("[PATCH 3/5] three", diff), "one.patch").patches.size() == 1);
  // Whole, in any order the thread had them; unnumbered patches in the file's order.
  CHECK(split_series(mail("[PATCH 2/2] two", diff) + mail("[PATCH 1/2] one", diff), "whole.mbox").size() == 2);
  CHECK(split_series(mail("one", diff) + mail("two", diff), "plain.mbox").size() == 2);
}

TEST_CASE("a body line \">From \" stays escaped in the split files: reading one back gives its one patch, not a hidden second (sixth attack)") {
  // "diff --git a/HIDDEN.c b/HIDDEN.c\n--- a/HIDDEN.c\n+++ b/HIDDEN.c\n@@ -0,0 +1 @@\n+HIDDEN\n", base64.
  const std::string hidden =
      "ZGlmZiAtLWdpdCBhL0hJRERFTi5jIGIvSElEREVOLmMKLS0tIGEvSElEREVOLmMKKysrIGIvSElEREVOLmMKQEAgLTAsMCArMSBA"
      "QAorSElEREVOCg==";
  const std::string mail =
      "From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\n"
      "From: A Developer <dev@example.org>\n"
      "Subject: [PATCH] btrfs: x\n"
      "Message-ID: <one@example.org>\n"
      "\n"
      "Fix it.\n"
      "---\n"
      "diff --git a/fs/btrfs/x.c b/fs/btrfs/x.c\n"
      "--- a/fs/btrfs/x.c\n"
      "+++ b/fs/btrfs/x.c\n"
      "@@ -1 +1 @@\n"
      "-old\n"
      "+new\n"
      ">From nobody Mon Sep 17 00:00:00 2001\n"
      ">>From two levels\n"
      "Content-Transfer-Encoding: base64\n"
      "Subject: x\n"
      "\n" + hidden + "\n";
  auto files = split_series(mail, "smuggle.mbox");
  REQUIRE(files.size() == 1);
  auto first = parse_patch_file(mail, "smuggle.mbox").patches.at(0);
  auto again = parse_patch_file(files[0].text, files[0].name);
  REQUIRE(again.patches.size() == 1);
  CHECK(again.patches[0].files == std::vector<std::string>{"fs/btrfs/x.c"});
  CHECK(again.patches[0].text == first.text);  // the round trip keeps the text, its hash with it
  CHECK(again.patches[0].text.find("\nFrom nobody") != std::string::npos);
  CHECK(again.patches[0].text.find("\n>From two levels") != std::string::npos);
}

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>

#include "proc/runner.hpp"
#include "source/source.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

using ks::source::kernel_version_from_makefile;

namespace {

// `git -C REPO ARGS...` as a test's author: its output, trimmed; the test stops if it fails.
auto git_in(const std::filesystem::path& repo) {
  return [repo](std::vector<std::string> args) {
    args.insert(args.begin(), {"git", "-C", repo.string(), "-c", "user.name=t", "-c", "user.email=t@example.org"});
    auto r = ks::proc::run(ks::proc::command(args, std::chrono::minutes(1)));
    INFO(r.err);
    REQUIRE(r.ok());
    return ks::trim(r.out);
  };
}

}  // namespace

TEST_CASE("the kernel version comes from the top-level Makefile", "[source]") {
  CHECK(kernel_version_from_makefile("# SPDX-License-Identifier: GPL-2.0\nVERSION = 6\n"
                                     "PATCHLEVEL = 1\nSUBLEVEL = 192\nEXTRAVERSION =\n"
                                     "NAME = Curry Ramen\n") == "6.1.192");
  CHECK(kernel_version_from_makefile("VERSION = 6\nPATCHLEVEL = 10\nSUBLEVEL = 0\n"
                                     "EXTRAVERSION = -rc3\n") == "6.10.0-rc3");
  // Later assignments (e.g. in recipes) do not override the header.
  CHECK(kernel_version_from_makefile("VERSION = 5\nPATCHLEVEL = 4\nSUBLEVEL = 1\n"
                                     "EXTRAVERSION =\nfoo:\n\tVERSION = 9\n") == "5.4.1");
  CHECK(kernel_version_from_makefile("all:\n\techo hello\n").empty());
}

TEST_CASE("a source identity names itself by archive hash or commit", "[source]") {
  ks::source::SourceIdentity tarball{"tarball", "/x.tar.xz", "6.1.192", "abcd", "", ""};
  CHECK(tarball.key() == "abcd");
  ks::source::SourceIdentity git{"git", "/linux", "6.1.0", "", "0123abcd", ""};
  CHECK(git.key() == "git-0123abcd");
  // A SHA-256 commit id and an archive's hash are both 64 hex digits, never one key.
  const std::string id64(64, 'a');
  CHECK(ks::source::SourceIdentity{"git", "/linux", "6.1.0", "", id64, ""}.key() !=
        ks::source::SourceIdentity{"tarball", "/x.tar", "6.1.0", id64, "", ""}.key());
  auto round = ks::source::source_identity_from_json(ks::source::to_json(tarball));
  CHECK(round.origin == "/x.tar.xz");
  CHECK(round.version == "6.1.192");
  CHECK(round.archive_sha256 == "abcd");
}

TEST_CASE("a later commit of a git source is the diff from the source's commit, kept in the cache", "[source]") {
  KS_SKIP_UNLESS(ks::proc::have_program("git"), "needs git");
  ks::test::TempDir tmp("ks-commit-diff");
  auto repo = tmp.path / "linux";
  std::filesystem::create_directories(repo);
  auto git = git_in(repo);
  git({"init", "-q", "."});
  const std::string head = "foo:\n\t1\n\t2\n\t3\n\t4\n";  // git would name `foo:` in the hunk header
  ks::write_file(repo / "Makefile", head + "VERSION = 6\n");
  git({"add", "Makefile"});
  git({"commit", "-q", "-m", "base"});
  auto base_sha = git({"rev-parse", "HEAD"});
  ks::write_file(repo / "Makefile", head + "VERSION = 7\n");
  git({"commit", "-q", "-am", "btrfs: the tip"});
  auto tip_sha = git({"rev-parse", "HEAD"});

  ks::source::SourceIdentity base{"git", repo.string(), "6", "", base_sha, ""};
  auto d = ks::source::commit_diff(base, "HEAD", tmp.path / "cache");
  CHECK(d.commit == tip_sha);
  CHECK(d.subject == "btrfs: the tip");
  CHECK_FALSE(d.empty);
  CHECK(d.diff == tmp.path / "cache" / "commits" / (base_sha + ".." + tip_sha + ".diff"));
  auto text = ks::read_file(d.diff);
  CHECK(text.find("-VERSION = 6") != std::string::npos);
  CHECK(text.find("+VERSION = 7") != std::string::npos);
  // Full blob ids: the text (hashed into the kernel's cache key) does not depend on how many
  // objects a clone holds, which sets the abbreviation length.
  auto index = text.substr(text.find("\nindex ") + 7, 81);
  CHECK(index.find("..") == 40);

  // Hunk headers carry no function name: git picks it by the checked-out .gitattributes.
  CHECK(text.find("\n@@ -3,4 +3,4 @@\n") != std::string::npos);
  // A user's git config and the work tree's attributes do not change it.
  git({"config", "diff.noprefix", "true"});
  git({"config", "diff.algorithm", "patience"});
  ks::write_file(repo / ".git/info/attributes", "Makefile diff=cpp\n");
  CHECK(ks::read_file(ks::source::commit_diff(base, "HEAD", tmp.path / "cache").diff) == text);

  auto same = ks::source::commit_diff(base, base_sha, tmp.path / "cache");
  CHECK(same.empty);
  CHECK(ks::read_file(same.diff).empty());
  CHECK_THROWS_AS(ks::source::commit_diff(base, "no-such-branch", tmp.path / "cache"), ks::UserError);
  // A binary change cannot go through patch(1): refused, not silently left out.
  ks::write_file(repo / "logo.bin", std::string("\0\1\2binary", 9));
  git({"add", "logo.bin"});
  git({"commit", "-q", "-m", "a logo"});
  CHECK_THROWS_WITH(ks::source::commit_diff(base, "HEAD", tmp.path / "cache"),
                    Catch::Contains("changes a binary file") && Catch::Contains("logo.bin"));
  // Thirty-ninth attack: what the repository makes git print is bounded. A subject of 1 MiB is
  // cut to 160 columns; a diff over 64 MiB (a patch's limit) is refused, not read to the end.
  ks::source::SourceIdentity logo{"git", repo.string(), "6", "", git({"rev-parse", "HEAD"}), ""};
  ks::write_file(tmp.path / "message", std::string(1 << 20, 's') + "\n\nbody\n");
  ks::write_file(repo / "Makefile", head + "VERSION = 8\n");
  git({"commit", "-q", "-a", "-F", (tmp.path / "message").string()});
  auto long_subject = ks::source::commit_diff(logo, "HEAD", tmp.path / "cache");
  CHECK(long_subject.subject.size() <= 160);
  CHECK(ks::starts_with(long_subject.subject, "sss"));
  // And a link planted where the cache keeps the diff is replaced, never read (/dev/zero).
  std::filesystem::remove(long_subject.diff);
  std::filesystem::create_symlink("/dev/zero", long_subject.diff);
  CHECK(ks::source::commit_diff(logo, "HEAD", tmp.path / "cache").text == long_subject.text);
  CHECK_FALSE(std::filesystem::is_symlink(long_subject.diff));
  CHECK(ks::read_file(long_subject.diff) == long_subject.text);
  std::string big;
  for (int i = 0; i < (24 << 20); ++i) big += "a\n";  // 48 MiB, so a diff of 72 MiB
  ks::write_file(repo / "big", big);
  git({"add", "big"});
  git({"commit", "-q", "-m", "big"});
  CHECK_THROWS_WITH(ks::source::commit_diff(logo, "HEAD", tmp.path / "cache"),
                    Catch::Contains("is larger than 64 MiB"));
  ks::source::SourceIdentity tarball{"debian", "/usr/src/linux-source-6.1.tar.xz", "6.1", "abcd", "", ""};
  CHECK_THROWS_AS(ks::source::commit_diff(tarball, "HEAD", tmp.path / "cache"), ks::UserError);
}

namespace {

// A git tree at DIR with one empty commit.
void git_tree(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  for (std::vector<std::string> args : {std::vector<std::string>{"init", "-q", "."},
                                        {"-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q",
                                         "--allow-empty", "-m", "one"}}) {
    args.insert(args.begin(), {"git", "-C", dir.string()});
    auto r = ks::proc::run(ks::proc::command(args, std::chrono::minutes(1)));
    INFO(r.err);
    REQUIRE(r.ok());
  }
}

}  // namespace

TEST_CASE("a git source named by a relative path is the one git reads, though git runs in its git directory", "[source]") {
  KS_SKIP_UNLESS(ks::proc::have_program("git"), "needs git");
  ks::test::TempDir tmp("ks-git-relative");
  git_tree(tmp.path / "linux");
  auto relative = std::filesystem::relative(tmp.path / "linux");
  REQUIRE(relative.is_relative());
  auto r = ks::proc::run(ks::source::git_command(relative, {"rev-parse", "--absolute-git-dir"}, std::chrono::minutes(1)));
  INFO(r.err);
  REQUIRE(r.ok());
  CHECK(ks::trim(r.out) == std::filesystem::canonical(tmp.path / "linux/.git").string());
}

TEST_CASE("a git source replaced after its first command is checked again", "[source]") {
  KS_SKIP_UNLESS(ks::proc::have_program("git"), "needs git");
  KS_SKIP_UNLESS(::geteuid() == 0, "only root's git commands check who may change the repository");
  ks::test::TempDir tmp("ks-git-replaced");
  const auto repo = tmp.path / "linux";
  git_tree(repo);
  CHECK(ks::proc::run(ks::source::git_command(repo, {"rev-parse", "HEAD"}, std::chrono::minutes(1))).ok());
  // Its owner moves it away; what now has its name holds a config another user may change.
  std::filesystem::rename(repo, tmp.path / "moved");
  git_tree(repo);
  REQUIRE(::chown((repo / ".git/config").c_str(), 65534, 65534) == 0);
  CHECK_THROWS_WITH(ks::source::git_command(repo, {"rev-parse", "HEAD"}, std::chrono::minutes(1)),
                    Catch::Contains("config belongs to uid 65534"));
  // The first one, where it is now, is still known and still fine.
  CHECK(ks::proc::run(ks::source::git_command(tmp.path / "moved", {"rev-parse", "HEAD"}, std::chrono::minutes(1))).ok());
}

TEST_CASE("a sweep removes this namespace's temporaries of dead processes, and nobody else's", "[source]") {
  // Fortieth attack: a build in its own PID namespace (or on another node sharing the cache)
  // judged a live run's pid dead, and deleted the source it was unpacking.
  ks::test::TempDir tmp("ks-sweep");
  const auto live = ks::source::temporary_name("live");
  auto dead = ks::source::temporary_name("dead");
  dead = dead.substr(0, dead.rfind('-') + 1) + "999999999";  // no such pid
  const std::string elsewhere = ".tmp-elsewhere-0123456789ab-999999999";
  for (auto& name : {live, dead, elsewhere}) std::filesystem::create_directories(tmp.path / name / "unpack");
  ks::source::sweep_stale_temporaries(tmp.path);
  CHECK(std::filesystem::exists(tmp.path / live));
  CHECK_FALSE(std::filesystem::exists(tmp.path / dead));
  CHECK(std::filesystem::exists(tmp.path / elsewhere));
}

TEST_CASE("a commit is unpacked as its own tree, whatever the repository's replace refs and attributes say", "[source]") {
  KS_SKIP_UNLESS(ks::proc::have_program("git"), "needs git");
  ks::test::TempDir tmp("ks-git-own-tree");
  const auto repo = tmp.path / "linux";
  std::filesystem::create_directories(repo);
  auto git = git_in(repo);
  git({"init", "-q", "."});
  ks::write_file(repo / "Makefile", "VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 0\n# genuine\n");
  ks::write_file(repo / "file.c", "int genuine;\n");
  git({"add", "Makefile", "file.c"});
  git({"commit", "-q", "-m", "genuine"});
  const auto genuine = git({"rev-parse", "HEAD"});
  ks::write_file(repo / "Makefile", "VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 0\n# other\n");
  git({"commit", "-q", "-am", "other"});
  const auto other = git({"rev-parse", "HEAD"});
  git({"reset", "-q", "--hard", genuine});
  // The repository's owner makes git show another tree for the genuine commit, and leave a
  // file out of its archive (forty-first attack): the cache would keep both under its id.
  git({"replace", genuine, other});
  ks::write_file(repo / ".git/info/attributes", "file.c export-ignore\n");
  REQUIRE(git({"show", genuine + ":Makefile"}).find("other") != std::string::npos);

  auto prepared = ks::source::prepare({"git", repo.string(), genuine}, tmp.path / "cache");
  CHECK(prepared.identity.commit == genuine);
  CHECK(ks::read_file(prepared.tree / "Makefile").find("genuine") != std::string::npos);
  CHECK(ks::read_file(prepared.tree / "file.c") == "int genuine;\n");
  CHECK_FALSE(std::filesystem::exists(prepared.tree.parent_path() / "git"));
}

TEST_CASE("a commit whose objects do not hash to their ids is refused, and a SHA-256 repository unpacks", "[source]") {
  KS_SKIP_UNLESS(ks::proc::have_program("git"), "needs git");
  ks::test::TempDir tmp("ks-git-objects");
  auto make = [&](const std::filesystem::path& repo, const std::string& format) {
    std::filesystem::create_directories(repo);
    auto git = git_in(repo);
    git({"init", "-q", "--object-format=" + format, "."});
    ks::write_file(repo / "Makefile", "VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 0\n");
    std::filesystem::create_directories(repo / "fs/btrfs");
    ks::write_file(repo / "fs/btrfs/file.c", "int genuine;\n");
    ks::write_file(repo / "scripts-run", "#!/bin/sh\n");
    std::filesystem::permissions(repo / "scripts-run", std::filesystem::perms::owner_exec, std::filesystem::perm_options::add);
    std::filesystem::create_symlink("fs/btrfs/file.c", repo / "link");
    git({"add", "-A"});
    git({"commit", "-q", "-m", "genuine"});
    return git;
  };

  // SHA-256 objects are read as such (forty-second attack: the borrowed directory read them as SHA-1).
  const auto sha256 = tmp.path / "sha256";
  auto git256 = make(sha256, "sha256");
  const auto commit256 = git256({"rev-parse", "HEAD"});
  REQUIRE(commit256.size() == 64);
  auto prepared = ks::source::prepare({"git", sha256.string(), commit256}, tmp.path / "cache");
  CHECK(ks::read_file(prepared.tree / "fs/btrfs/file.c") == "int genuine;\n");
  CHECK(std::filesystem::is_symlink(prepared.tree / "link"));

  // The repository's owner rewrites the blob's object file in place with another blob's
  // (forty-second attack): git archive reads it unchecked, and the cache would keep it under
  // the genuine commit's id for every later build of it.
  const auto repo = tmp.path / "linux";
  auto git = make(repo, "sha1");
  const auto commit = git({"rev-parse", "HEAD"});
  const auto blob = git({"rev-parse", "HEAD:fs/btrfs/file.c"});
  ks::write_file(tmp.path / "evil.c", "int evil;\n");
  const auto evil = git({"hash-object", "-w", (tmp.path / "evil.c").string()});
  const auto object = [&](const std::string& id) { return repo / ".git/objects" / id.substr(0, 2) / id.substr(2); };
  std::filesystem::remove(object(blob));
  std::filesystem::copy_file(object(evil), object(blob));
  REQUIRE(git({"show", commit + ":fs/btrfs/file.c"}) == "int evil;");
  CHECK_THROWS_WITH(ks::source::prepare({"git", repo.string(), commit}, tmp.path / "cache"),
                    Catch::Contains("is not the commit's own tree"));
  CHECK_FALSE(std::filesystem::exists(tmp.path / "cache/source" / ("git-" + commit)));
}

TEST_CASE("a rewritten subtree that adds a submodule's empty directory is refused", "[source]") {
  KS_SKIP_UNLESS(ks::proc::have_program("git"), "needs git");
  // Forty-third attack: git checks the root tree's object when it reads the commit, not the
  // subtrees git archive reads after; a gitlink it writes as an empty directory, which no git
  // tree holds, went unhashed, and include/config stopped every later build of the commit.
  ks::test::TempDir tmp("ks-git-gitlink");
  const auto repo = tmp.path / "linux";
  std::filesystem::create_directories(repo / "include/linux");
  auto git = git_in(repo);
  git({"init", "-q", "."});
  ks::write_file(repo / "Makefile", "VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 0\n");
  ks::write_file(repo / "include/linux/x.h", "int x;\n");
  git({"add", "-A"});
  git({"commit", "-q", "-m", "genuine"});
  const auto commit = git({"rev-parse", "HEAD"});
  const auto include = git({"rev-parse", "HEAD:include"}), linux_tree = git({"rev-parse", "HEAD:include/linux"});
  auto raw = [](const std::string& hex) {
    std::string out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    return out;
  };
  ks::write_file(tmp.path / "tree", std::string("160000 config") + '\0' + raw(commit) + "40000 linux" + '\0' + raw(linux_tree));
  const auto evil = git({"hash-object", "--literally", "-t", "tree", "-w", (tmp.path / "tree").string()});
  const auto object = [&](const std::string& id) { return repo / ".git/objects" / id.substr(0, 2) / id.substr(2); };
  std::filesystem::remove(object(include));
  std::filesystem::copy_file(object(evil), object(include));
  CHECK_THROWS_WITH(ks::source::prepare({"git", repo.string(), commit}, tmp.path / "cache"),
                    Catch::Contains("is not the commit's own tree"));
  CHECK_FALSE(std::filesystem::exists(tmp.path / "cache/source" / ("git-" + commit)));
}

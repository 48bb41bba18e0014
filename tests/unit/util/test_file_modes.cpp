// Who besides a file's owner may write to it: what every check of a run directory, an output
// place and a directory on the way to one asks.
#include <catch2/catch.hpp>

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/ownership.hpp"

namespace {
struct stat with(uid_t uid, gid_t gid, mode_t mode) {
  struct stat st{};
  st.st_uid = uid;
  st.st_gid = gid;
  st.st_mode = S_IFDIR | mode;
  return st;
}
}  // namespace

TEST_CASE("others_may_write: the world, or a group shared beyond root's and the owner's own") {
  using ks::others_may_write;
  CHECK_FALSE(others_may_write(with(0, 0, 0755)));
  CHECK(others_may_write(with(0, 0, 0757)));
  // root under umask 002: its directories are group-writable by group root, which only root is in.
  CHECK_FALSE(others_may_write(with(0, 0, 0775)));
  // A group-writable directory of a shared group: its members are others.
  const struct group* shared = ::getgrnam("nogroup");
  if (!shared) shared = ::getgrnam("users");
  REQUIRE(shared);
  CHECK(others_may_write(with(0, shared->gr_gid, 0775)));
  CHECK_FALSE(others_may_write(with(0, shared->gr_gid, 0755)));
  // Debian's nobody has the shared group nogroup: its group-writable directories are others'.
  if (const struct passwd* nobody = ::getpwnam("nobody"))
    CHECK(others_may_write(with(nobody->pw_uid, nobody->pw_gid, 0775)));
  // A user whose primary group is a private one of their own name, with no other member
  // (Debian's adduser): their umask 002 directories are theirs alone.
  for (const struct passwd* user = ::getpwent(); user; user = ::getpwent()) {
    const struct group* primary = ::getgrgid(user->pw_gid);
    if (user->pw_uid == 0 || !primary || std::string(primary->gr_name) != user->pw_name) continue;
    if (primary->gr_mem && primary->gr_mem[0]) continue;
    CHECK_FALSE(others_may_write(with(user->pw_uid, user->pw_gid, 0775)));
    CHECK(others_may_write(with(user->pw_uid, user->pw_gid, 0777)));
    break;
  }
  ::endpwent();
}

TEST_CASE("require_trusted_input: under sudo, what the invoking user could not read is refused, a link to it too") {
  if (::geteuid() != 0) {
    WARN("SKIP: the sudo user's reading is asked for root only");
    return;
  }
  ks::test::TempDir dir;
  std::filesystem::permissions(dir.path, std::filesystem::perms(0755));
  auto secret = dir.path / "secret.config";
  ks::write_file(secret, "TOPSECRET=y\n");
  std::filesystem::permissions(secret, std::filesystem::perms(0600));
  std::filesystem::create_symlink(secret, dir.path / "fragment.config");
  {
    ks::test::ScopedEnv sudo({{"SUDO_UID", "65534"}, {"SUDO_GID", "65534"}});  // as `sudo` leaves them, for nobody
    CHECK_THROWS_WITH(ks::require_trusted_input(secret, "config fragment"), Catch::Contains("uid 65534, who ran sudo, cannot read it"));
    CHECK_THROWS_WITH(ks::require_trusted_input(dir.path / "fragment.config", "config fragment"),
                      Catch::Contains("cannot read it"));
    // The read itself is the user's: no link swapped in after the check reads root's file.
    CHECK_THROWS_WITH(ks::read_input_file(dir.path / "fragment.config", 4096, "config fragment"),
                      Catch::Contains("cannot be read by uid 65534, who ran sudo"));
    std::filesystem::permissions(secret, std::filesystem::perms(0644));
    CHECK_NOTHROW(ks::require_trusted_input(dir.path / "fragment.config", "config fragment"));
    CHECK(ks::read_input_file(dir.path / "fragment.config", 4096, "config fragment") == "TOPSECRET=y\n");
    std::filesystem::permissions(dir.path, std::filesystem::perms(0700));  // the way there counts too
    CHECK_THROWS(ks::require_trusted_input(secret, "config fragment"));
  }
  CHECK_NOTHROW(ks::require_trusted_input(secret, "config fragment"));  // root's own reading, its ids back
  std::filesystem::permissions(secret, std::filesystem::perms(0600));
  CHECK(ks::read_input_file(secret, 4096, "config fragment") == "TOPSECRET=y\n");
}

TEST_CASE("untrusted_on_the_way names the directory another user owns, not root's link to it") {
  if (::geteuid() != 0) {
    WARN("SKIP: the way is checked for root only");
    return;
  }
  ks::test::TempDir dir;
  std::filesystem::permissions(dir.path, std::filesystem::perms(0755));
  auto theirs = dir.path / "theirs";
  std::filesystem::create_directory(theirs);
  REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
  std::filesystem::create_symlink(theirs, dir.path / "rootlink");
  auto why = ks::untrusted_on_the_way(dir.path / "rootlink" / "cache", ks::PathRole::kTrustedDirectory);
  REQUIRE(why);
  CHECK_THAT(*why, Catch::StartsWith(theirs.string() + " belongs to uid 65534"));
}

TEST_CASE("reader_of_anyones_file: root reads a bundle through another user's link as anyone, so not their way to its files") {
  if (::geteuid() != 0) {
    WARN("SKIP: reading as anyone is root's only");
    return;
  }
  ks::test::TempDir dir;
  namespace fs = std::filesystem;
  fs::permissions(dir.path, fs::perms(0755));
  fs::create_directory(dir.path / "private");
  fs::permissions(dir.path / "private", fs::perms(0700));
  const auto secret = dir.path / "private/config.json";
  ks::write_file(secret, "{\"experiment\": \"TOKEN\"}\n");
  fs::permissions(secret, fs::perms(0600));
  fs::create_directory(dir.path / "public");
  fs::permissions(dir.path / "public", fs::perms(01777));  // as /tmp
  const auto link = dir.path / "public/bundle.json";
  fs::create_symlink(secret, link);
  REQUIRE(::lchown(link.c_str(), 65534, 65534) == 0);  // another user's link (fifty-third attack)
  CHECK(ks::reader_of_anyones_file(link) == ks::Reader::anyone);
  CHECK_THROWS_WITH(ks::read_input_file(link, 4096, "bundle", ks::Links::follow, ks::reader_of_anyones_file(link)),
                    Catch::Contains("cannot be read by anyone (uid 65534)"));
  // The control: root's own link there leads root to root's file.
  REQUIRE(::lchown(link.c_str(), 0, 0) == 0);
  CHECK(ks::reader_of_anyones_file(link) == ks::Reader::invoking_user);
  CHECK(ks::read_input_file(link, 4096, "bundle", ks::Links::follow, ks::reader_of_anyones_file(link)) ==
        "{\"experiment\": \"TOKEN\"}\n");
  // A file anyone may read, in another's place, is read as before.
  ks::write_file(dir.path / "public/theirs.json", "{}");
  fs::permissions(dir.path / "public/theirs.json", fs::perms(0644));
  REQUIRE(::chown((dir.path / "public/theirs.json").c_str(), 65534, 65534) == 0);
  CHECK(ks::read_input_file(dir.path / "public/theirs.json", 4096, "bundle", ks::Links::follow,
                            ks::reader_of_anyones_file(dir.path / "public/theirs.json")) == "{}");
}

TEST_CASE("trusted_program_path: root keeps of PATH only directories no one else can put a program in") {
  if (::geteuid() != 0) {
    WARN("SKIP: PATH is narrowed for root only");
    return;
  }
  ks::test::TempDir dir;
  namespace fs = std::filesystem;
  fs::permissions(dir.path, fs::perms(0755));
  const auto roots = dir.path / "roots", theirs = dir.path / "theirs", shared = dir.path / "shared";
  for (auto& d : {roots, theirs, shared}) fs::create_directory(d);
  fs::permissions(roots, fs::perms(0755));
  REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
  fs::permissions(shared, fs::perms(01777));
  fs::create_symlink("/usr/bin", dir.path / "their-link");  // a link of theirs, flipped at will (fifty-fifth attack)
  REQUIRE(::lchown((dir.path / "their-link").c_str(), 65534, 65534) == 0);
  const std::string path = ".:bin::" + theirs.string() + ":" + shared.string() + ":" + (shared / "missing").string() + ":" +
                           (dir.path / "their-link").string() + ":" + roots.string() + ":/usr/bin";
  CHECK(ks::trusted_program_path(path) == roots.string() + ":/usr/bin");
  // Nothing of use: the system's own directories, those of them that are trusted.
  const auto fallback = ks::trusted_program_path(".:" + theirs.string());
  CHECK_THAT(fallback, Catch::Contains("/usr/bin"));
  CHECK(fallback.find(theirs.string()) == std::string::npos);
}

TEST_CASE("trusted_environment: root passes on only the variables it needs, and none naming another user's place") {
  if (::geteuid() != 0) {
    WARN("SKIP: the environment is narrowed for root only");
    return;
  }
  ks::test::TempDir dir;
  namespace fs = std::filesystem;
  fs::permissions(dir.path, fs::perms(0755));
  const auto theirs = dir.path / "theirs", roots = dir.path / "roots";
  fs::create_directory(theirs);
  fs::create_directory(roots);
  fs::permissions(roots, fs::perms(0755));
  REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
  const auto kept = ks::trusted_environment({
      "BASH_ENV=" + (theirs / "env.sh").string(), "TAR_OPTIONS=--use-compress-program=x", "MAKEFILES=/x",
      "BASH_FUNC_make%%=() { x; }", "LD_PRELOAD=/x.so", "CCACHE_PREFIX=x", "SBATCH_EXPORT=ALL", "notanentry",
      "LANG=C.UTF-8", "LC_ALL=/x/locale", "TZ=:/etc/localtime", "SUDO_USER=a\nb", "SUDO_GID=4242/", "HOME=" + theirs.string(), "TMPDIR=" + roots.string(),
      "GITHUB_STEP_SUMMARY=" + (theirs / "summary.md").string(), "KSANDWICH_CACHE=/var/cache/x", "SUDO_UID=4242",
      "PATH=.:" + theirs.string() + ":/usr/bin"});
  using Variables = std::vector<std::pair<std::string, std::string>>;
  // SUDO_GID as it is: invoking_user() refuses it, rather than root going on as plain root.
  CHECK(kept.variables == Variables{{"LANG", "C.UTF-8"}, {"SUDO_GID", "4242/"}, {"TMPDIR", roots.string()},
                                    {"KSANDWICH_CACHE", "/var/cache/x"}, {"SUDO_UID", "4242"}, {"PATH", "/usr/bin"}});
  // A directory named relative to where ksandwich started is passed on as the one checked.
  const auto cwd = fs::current_path();
  fs::current_path(roots);
  const auto relative = ks::trusted_environment({"TMPDIR=."});
  fs::current_path(cwd);
  CHECK(relative.variables.front() == std::pair<std::string, std::string>{"TMPDIR", (roots / ".").string()});
  REQUIRE(kept.notes.size() == 2);
  CHECK_THAT(kept.notes[0], Catch::StartsWith("HOME=" + theirs.string() + ": ") && Catch::Contains("belongs to uid 65534"));
  CHECK_THAT(kept.notes[1], Catch::StartsWith("GITHUB_STEP_SUMMARY=") && Catch::Contains("belongs to uid 65534"));
  // No PATH at all: the system's own directories.
  CHECK_THAT(ks::trusted_environment({}).variables.back().second, Catch::Contains("/usr/bin"));
}

TEST_CASE("write_file_append: under sudo, as the invoking user: a file of root's they could not write is not appended to") {
  if (::geteuid() != 0) {
    WARN("SKIP: the sudo user's writing is asked for root only");
    return;
  }
  ks::test::TempDir dir;
  std::filesystem::permissions(dir.path, std::filesystem::perms(0755));
  auto roots = dir.path / "root-only.md";
  ks::write_file(roots, "root's\n");
  auto theirs = dir.path / "theirs";
  std::filesystem::create_directory(theirs);
  REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
  {
    ks::test::ScopedEnv sudo({{"SUDO_UID", "65534"}, {"SUDO_GID", "65534"}});
    ks::AsInvokingUser as;
    CHECK_THROWS_AS(ks::write_file_append(roots, "appended\n"), ks::SystemError);
    ks::write_file_append(theirs / "summary.md", "appended\n");  // made by them, theirs
  }
  CHECK(ks::read_file(roots) == "root's\n");
  struct stat st{};
  REQUIRE(::stat((theirs / "summary.md").c_str(), &st) == 0);
  CHECK(st.st_uid == 65534);
}

TEST_CASE("create_output_directory: under sudo, what it makes is marked for the user, and nothing of root's that was there") {
  if (::geteuid() != 0) {
    WARN("SKIP: the mark of a directory made for the sudo user is root's to set");
    return;
  }
  ks::test::TempDir dir;
  if (::setxattr(dir.path.c_str(), "trusted.ks-probe", "1", 1, 0) != 0) {
    WARN("SKIP: the file system of " << dir.path << " keeps no trusted attributes (" << std::strerror(errno) << ")");
    return;
  }
  std::filesystem::permissions(dir.path, std::filesystem::perms(0755));
  auto theirs = dir.path / "theirs";
  std::filesystem::create_directory(theirs);
  REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
  auto roots = theirs / "roots";  // made by root some other way, in a place of theirs
  std::filesystem::create_directories(roots / "inside");
  ks::test::ScopedEnv sudo({{"SUDO_UID", "65534"}, {"SUDO_GID", "65534"}});
  ks::create_output_directory(theirs / "a/b/run");
  for (auto made : {theirs / "a", theirs / "a/b", theirs / "a/b/run"}) {
    CAPTURE(made);
    CHECK(ks::made_for_invoking_user(made));
  }
  std::filesystem::create_directories(theirs / "a/b/run/points/01");  // root's, inside: theirs to continue
  CHECK(ks::made_for_invoking_user(theirs / "a/b/run/points/01"));
  ks::create_output_directory(roots);  // there before: not marked
  CHECK_FALSE(ks::made_for_invoking_user(roots));
  // Where it is made is asked again at the mkdir, of the directory itself: not in one of root's
  // that is not theirs (a link flipped after the output checks would lead there).
  CHECK_THROWS_WITH(ks::create_output_directory(roots / "new"), Catch::Contains("cannot write there"));
  CHECK_FALSE(std::filesystem::exists(roots / "new"));
  CHECK_FALSE(ks::made_for_invoking_user(roots / "inside"));
  CHECK_FALSE(ks::made_for_invoking_user(theirs));  // theirs, not root's: writable, never marked
  {
    ks::test::ScopedEnv other({{"SUDO_UID", "4242"}, {"SUDO_GID", "4242"}});
    CHECK_FALSE(ks::made_for_invoking_user(theirs / "a/b/run"));  // made for another user
  }
}

TEST_CASE("status_as_invoking_user: under sudo, what lies where the user cannot reach is not found, there or not") {
  if (::geteuid() != 0) {
    WARN("SKIP: the sudo user's view is asked for root only");
    return;
  }
  ks::test::TempDir dir;
  std::filesystem::permissions(dir.path, std::filesystem::perms(0700));
  ks::write_file(dir.path / "exists.json", "{}");
  CHECK(std::filesystem::is_regular_file(ks::status_as_invoking_user(dir.path / "exists.json")));  // root's own view
  ks::test::ScopedEnv sudo({{"SUDO_UID", "65534"}, {"SUDO_GID", "65534"}});
  CHECK_FALSE(std::filesystem::exists(ks::status_as_invoking_user(dir.path / "exists.json")));
  CHECK_FALSE(std::filesystem::exists(ks::status_as_invoking_user(dir.path / "missing.json")));
}

TEST_CASE("copy_tree_as_invoking_user: directories and regular files only, and under sudo read as the user") {
  ks::test::TempDir dir;
  std::filesystem::permissions(dir.path, std::filesystem::perms(0755));
  auto from = dir.path / "run";
  std::filesystem::create_directories(from / "points/01");
  ks::write_file(from / "bundle.json", "{}");
  ks::write_file(from / "points/01/console.log", "boot\n");
  ks::write_file(dir.path / "secret", "root's\n");
  std::filesystem::create_symlink(dir.path / "secret", from / "points/link");
  REQUIRE(::mkfifo((from / "fifo").c_str(), 0600) == 0);  // copied, it would wait for a writer
  ks::copy_tree_as_invoking_user(from, dir.path / "copy", 1 << 20);
  CHECK(ks::read_file(dir.path / "copy/bundle.json") == "{}");
  CHECK(ks::read_file(dir.path / "copy/points/01/console.log") == "boot\n");
  CHECK_FALSE(std::filesystem::exists(std::filesystem::symlink_status(dir.path / "copy/points/link")));
  CHECK_FALSE(std::filesystem::exists(std::filesystem::symlink_status(dir.path / "copy/fifo")));
  if (::geteuid() != 0) return;
  // Theirs, holding a file of root's they cannot read: not copied for them.
  REQUIRE(::chown(from.c_str(), 65534, 65534) == 0);
  ks::write_file(from / "points/01/root-only", "root's\n");
  std::filesystem::permissions(from / "points/01/root-only", std::filesystem::perms(0600));
  ks::test::ScopedEnv sudo({{"SUDO_UID", "65534"}, {"SUDO_GID", "65534"}});
  CHECK_THROWS_WITH(ks::copy_tree_as_invoking_user(from, dir.path / "copy2", 1 << 20),
                    Catch::Contains("cannot be copied by uid 65534, who ran sudo"));
}

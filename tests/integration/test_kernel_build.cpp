// Real kernel builds from the default source (Debian's linux-source-6.1) with
// configs/kernel/btrfs-bench.config: the product, so CI builds one every run (~9 min cold
// on 2 cores with an empty ccache; the default cache's ccache is shared with real use and
// the other integration tests, and kept between runs where the machine allows).
//
// The kernel-building cases share one test cache ($KSANDWICH_TEST_CACHE, default the
// integration tests' cache, tests/support/integration_cache.hpp); the full-build case removes
// the kernels it builds first, so the full build is real.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <set>

#include "kernel/audit.hpp"
#include "kernel/kbuild.hpp"
#include "kernel/patches.hpp"
#include "evidence/bundle.hpp"
#include "proc/runner.hpp"
#include "report/report.hpp"
#include "source/source.hpp"
#include "support/integration_cache.hpp"
#include "support/paths.hpp"
#include "support/skip.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// A command with a timeout: every external program runs through ks::proc::run.
ks::proc::Command command(std::vector<std::string> argv,
                      std::chrono::milliseconds timeout = std::chrono::minutes(5)) {
  ks::proc::Command c;
  c.argv = std::move(argv);
  c.timeout = timeout;
  return c;
}

bool have_default_source() { return fs::exists(ks::source::kDebianTarball); }

void require_toolchain() {
  for (auto tool : {"make", "gcc", "ld", "tar", "patch", "cp", "bc", "flex", "bison"})
    KS_SKIP_UNLESS(ks::proc::have_program(tool), std::string("needs ") + tool);
}

fs::path test_cache() {
  if (const char* env = std::getenv("KSANDWICH_TEST_CACHE")) return env;
  return ks::test::integration_cache();
}

ks::kernel::BuildRequest request(const std::string& arm, std::vector<std::string> patches = {}) {
  ks::kernel::BuildRequest r;
  r.arm = arm;
  r.patches = std::move(patches);
  r.config.fragments = {"btrfs-bench.config"};
  r.repo_dir = ks::test::source_dir();
  r.cache_root = test_cache();
  r.ccache_dir = ks::source::default_cache_root() / "ccache";
  return r;
}

fs::path patch_file(const std::string& name) {
  return ks::test::source_dir() / "kernel-patches" / name;
}

// Entries under DIR, for "nothing was left behind" checks (the lock file is not an entry).
std::set<std::string> entries(const fs::path& dir) {
  std::set<std::string> out;
  std::error_code ec;
  if (fs::is_directory(dir, ec))
    for (auto& e : fs::directory_iterator(dir))
      if (e.path().filename() != ".lock") out.insert(e.path().filename().string());
  return out;
}

std::string user_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ks::UserError& e) {
    return std::string(e.what()) + "\nhint: " + e.hint();
  }
  return "(no UserError)";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A temporary directory removed at scope exit.
struct Scratch {
  fs::path path;
  Scratch() {
    char tmpl[] = "/tmp/ks-kbuild-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// The mailbox a list archive gives for a two-patch series with a cover letter: messages
// made from two shipped patches, each with its own Message-ID.
std::string series_mbox() {
  auto mail = [](const std::string& file, const std::string& n, const std::string& id) {
    auto set = ks::kernel::parse_patch_file(ks::read_file(patch_file(file)), file);
    auto& p = set.patches.at(0);
    auto title = p.subject.substr(std::string("[PATCH] ").size());
    return "From mboxrd@z Thu Jan  1 00:00:00 1970\n"
           "From: " + p.author + "\n"
           "Date: " + p.date + "\n"
           "Subject: [PATCH " + n + "/2] " + title + "\n"
           "Message-ID: " + id + "\n"
           "\n" + p.text + "\n";
  };
  return "From mboxrd@z Thu Jan  1 00:00:00 1970\n"
         "From: ksandwich test patches <ksandwich@localhost.invalid>\n"
         "Date: Mon, 4 May 2026 09:55:00 +0000\n"
         "Subject: [PATCH 0/2] btrfs: recreate the SB_NOSEC regression, plus a no-op\n"
         "Message-ID: <cover.ksandwich@localhost.invalid>\n"
         "\n"
         "Two patches for the pipeline's own tests.\n\n" +
         mail("btrfs-noop-comment.patch", "2", "<2-noop.ksandwich@localhost.invalid>") +
         mail("btrfs-drop-sb-nosec.patch", "1", "<1-nosec.ksandwich@localhost.invalid>");
}

// A kernel source in miniature under DIR: a Makefile with the config targets and a bzImage
// recipe that writes into O= (plus RECIPE), as DIR/linux.tar.gz; a build of it takes a second.
struct Miniature {
  fs::path dir;
  explicit Miniature(fs::path at, const std::string& recipe = "") : dir(std::move(at)) {
    fs::create_directories(dir / "linux-6.1");
    ks::write_file(dir / "linux-6.1/Makefile",
                   "VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 0\nEXTRAVERSION =\n"
                   "tinyconfig olddefconfig:\n\t@touch $(O)/.config\n"
                   "bzImage:\n\t@mkdir -p $(O)/include/config $(O)/arch/x86/boot\n"
                   "\t@echo 6.1.0 > $(O)/include/config/kernel.release\n"
                   "\t@echo kernel > $(O)/arch/x86/boot/bzImage\n" + recipe);
    ks::write_file(dir / "empty.config", "");
  }
  fs::path tar() const {
    ks::proc::run_checked(command({"tar", "-czf", (dir / "linux.tar.gz").string(), "-C", dir.string(), "linux-6.1"}));
    return dir / "linux.tar.gz";
  }
  ks::kernel::BuildRequest request(const std::string& arm, std::vector<std::string> patches = {}) const {
    ks::kernel::BuildRequest r;
    r.arm = arm;
    r.source = {"tarball", tar().string(), ""};
    r.config.fragments = {(dir / "empty.config").string()};
    r.patches = std::move(patches);
    r.cache_root = dir / "cache";
    r.use_ccache = false;
    r.ccache_dir = dir / "ccache";
    r.jobs = 1;
    r.make_timeout = std::chrono::minutes(2);
    return r;
  }
};

int run_cli(const std::vector<std::string>& args, std::string* err = nullptr) {
  std::vector<std::string> argv = {ks::test::ksandwich_binary().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = ks::proc::run(command(argv, 30min));
  if (err) *err = r.err;
  return r.exit_code;
}

}  // namespace

TEST_CASE("a local tarball and a git tree are unpacked once into the source cache",
          "[build][source]") {
  KS_SKIP_UNLESS(ks::proc::have_program("tar") && ks::proc::have_program("git"), "needs tar and git");
  Scratch s;
  auto cache = s.path / "cache";
  fs::create_directories(s.path / "linux-9.9/fs");
  ks::write_file(s.path / "linux-9.9/Makefile",
                 "VERSION = 9\nPATCHLEVEL = 9\nSUBLEVEL = 1\nEXTRAVERSION = -test\n");
  ks::write_file(s.path / "linux-9.9/fs/file.c", "int x;\n");
  ks::proc::run_checked(command({"tar", "-czf", (s.path / "src.tar.gz").string(), "-C",
                                  s.path.string(), "linux-9.9"}));

  ks::experiment::KernelSource tarball{"tarball", (s.path / "src.tar.gz").string(), ""};
  int unpacks = 0;
  auto first = ks::source::prepare(tarball, cache, [&](const std::string&) { ++unpacks; });
  CHECK(first.identity.version == "9.9.1-test");
  CHECK(first.identity.archive_sha256 == ks::sha256_file(s.path / "src.tar.gz"));
  CHECK(first.tree == cache / "source" / first.identity.archive_sha256 / "tree");
  CHECK(fs::exists(first.tree / "fs/file.c"));
  auto second = ks::source::prepare(tarball, cache, [&](const std::string&) { ++unpacks; });
  CHECK(unpacks == 1);  // the second time the cache answers
  CHECK(second.tree == first.tree);
  CHECK(entries(cache / "source") == std::set<std::string>{first.identity.archive_sha256});

  // A git tree at a named commit: the commit is the identity, the tree is `git archive`.
  auto repo = s.path / "linux-9.9";
  auto git = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"git", "-C", repo.string(), "-c", "user.name=t", "-c",
                               "user.email=t@t"});
    return ks::proc::run_checked(command(args)).out;
  };
  git({"init", "-q"});
  git({"add", "."});
  git({"commit", "-qm", "one"});
  git({"tag", "v9.9.1"});
  auto commit = ks::trim(git({"rev-parse", "HEAD"}));
  ks::write_file(repo / "fs/file.c", "int y;  /* uncommitted: not part of the source */\n");
  auto from_git = ks::source::prepare({"git", repo.string(), "v9.9.1"}, cache);
  CHECK(from_git.identity.commit == commit);
  CHECK(from_git.identity.version == "9.9.1-test");
  CHECK(ks::read_file(from_git.tree / "fs/file.c") == "int x;\n");
  // Thirty-seventh attack: a dry run (find) took a committed VERSION of ../.. as the version
  // that names the build's directory, and read another user's identity.json there.
  ks::write_file(repo / "Makefile", "VERSION = ../../../../tmp/x\nPATCHLEVEL = 9\n");
  git({"commit", "-qam", "two"});
  CHECK(ks::source::find({"git", repo.string(), "HEAD"}, cache).identity.version.empty());
  CHECK(ks::source::find({"git", repo.string(), "v9.9.1"}, cache).identity.version == "9.9.1-test");

  auto missing_commit = user_error_of([&] { ks::source::prepare({"git", repo.string(), "nope"}, cache); });
  CHECK(contains(missing_commit, "no commit named `nope`"));
  auto missing = user_error_of([&] {
    ks::source::prepare({"tarball", (s.path / "absent.tar.xz").string(), ""}, cache);
  });
  CHECK(contains(missing, "kernel source not found"));
  CHECK(contains(missing, "absent.tar.xz"));
  // Nothing half-made under a real key.
  for (auto& e : entries(cache / "source")) CHECK(!ks::starts_with(e, ".tmp-"));
}

TEST_CASE("the shipped kernel patches apply cleanly to the default source", "[build][patches]") {
  KS_SKIP_UNLESS(have_default_source(), "needs /usr/src/linux-source-6.1.tar.xz (apt-get install linux-source-6.1)");
  require_toolchain();
  auto src = ks::source::prepare({}, test_cache());
  CHECK(src.identity.version == "6.1.192");
  std::set<std::string> checked;
  for (auto& e : fs::directory_iterator(ks::test::source_dir() / "kernel-patches")) {
    if (e.path().extension() != ".patch") continue;
    auto set = ks::kernel::parse_patch_file(ks::read_file(e.path()), e.path().filename().string());
    REQUIRE(set.patches.size() == 1);
    INFO(e.path().filename().string());
    Scratch s;
    ks::write_file(s.path / "p.diff", set.patches[0].text);
    auto dry = ks::proc::run(command({"patch", "-p1", "--dry-run", "--batch", "--forward",
                                       "--fuzz=0", "-d", src.tree.string(), "-i",
                                       (s.path / "p.diff").string()}));
    CHECK(dry.ok());
    CHECK(!contains(dry.out, "offset"));  // applies exactly where it was written
    CHECK(!contains(dry.out, "fuzz"));
    checked.insert(e.path().filename().string());
  }
  // Every patch a shipped experiment on the default source names was among them. (A git
  // source's experiment names patches for its own tree, which the user supplies with it:
  // writeback-inhibition.json.)
  int named = 0;
  for (auto& e : fs::directory_iterator(ks::test::source_dir() / "configs/experiments")) {
    auto experiment = nlohmann::json::parse(ks::read_file(e.path()));
    if (experiment.value("source", nlohmann::json::object()).value("kind", "") == "git") continue;
    for (auto& [arm, spec] : experiment["arms"].items())
      for (auto& patch : spec.value("patches", nlohmann::json::array())) {
        INFO(e.path().filename().string() << " arm " << arm);
        CHECK(checked.count(patch.get<std::string>()) == 1);
        ++named;
      }
  }
  CHECK(named >= 2);  // default.json and planted-cpu-cost.json at least
}

TEST_CASE("as root, a patch's Makefile runs confined: it cannot write outside the build's objects",
          "[build][hostile]") {
  KS_SKIP_UNLESS(have_default_source(), "needs /usr/src/linux-source-6.1.tar.xz (apt-get install linux-source-6.1)");
  KS_SKIP_UNLESS(::geteuid() == 0, "make runs confined only for root; others build with their own rights");
  KS_SKIP_UNLESS(ks::proc::have_program("bwrap"), "needs bwrap (apt-get install bubblewrap)");
  require_toolchain();
  Scratch s;
  // The top Makefile is read by every make, the config targets of a preflight included.
  const fs::path probe = "/var/tmp/ksandwich-confined-probe";
  fs::remove(probe);
  ks::write_file(s.path / "escape.patch",
                 "From: Mallory <m@example.org>\nSubject: [PATCH] kbuild: nothing to see\n\n---\n"
                 "--- a/Makefile\n+++ b/Makefile\n@@ -1,3 +1,4 @@\n # SPDX-License-Identifier: GPL-2.0\n"
                 "+$(shell touch " + probe.string() + "; echo pwned >> $(srctree)/README; touch $$CCACHE_DIR/planted; "
                 "ls /run/ksandwich > $$CCACHE_DIR/run-listing)\n VERSION = 6\n PATCHLEVEL = 1\n");
  auto r = request("patched", {(s.path / "escape.patch").string()});
  auto id = ks::kernel::preflight(r, ks::kernel::Progress::silent());
  CHECK(id["patches"][0]["subject"] == "[PATCH] kbuild: nothing to see");  // the patch applied and make ran
  CHECK_FALSE(fs::exists(probe));
  // The build's source tree is hard links into the source cache: it stayed read-only too.
  CHECK_FALSE(contains(ks::read_file(ks::source::prepare({}, test_cache()).tree / "README"), "pwned"));
  // A patched arm reads the shared ccache but cannot plant entries in it for later builds.
  CHECK_FALSE(fs::exists(*r.ccache_dir / "planted"));
  CHECK_FALSE(fs::exists(*r.ccache_dir / "run-listing"));
}

TEST_CASE("as root, a patch that makes the build's directory a link, or names files in patch's output, writes nothing outside",
          "[build][hostile]") {
  KS_SKIP_UNLESS(::geteuid() == 0, "make runs confined only for root; others build with their own rights");
  KS_SKIP_UNLESS(ks::proc::have_program("bwrap"), "needs bwrap (apt-get install bubblewrap)");
  for (auto tool : {"make", "tar", "patch", "cp"}) KS_SKIP_UNLESS(ks::proc::have_program(tool), std::string("needs ") + tool);
  Scratch s;
  Miniature m(s.path, "\t@echo planted > $(O)/planted\n");
  const auto victim = s.path / "victim";  // root's, outside the build
  fs::create_directories(victim);
  ks::write_file(victim / "existing", "root's file\n");
  const auto old_time = fs::last_write_time(victim / "existing") - std::chrono::hours(24 * 365);
  fs::last_write_time(victim / "existing", old_time);

  auto r = m.request("patched");
  // Twenty-seventh attack: ks-out, the directory the build writes and bwrap lets make write,
  // made a link by the patch: the control objects were copied, the .config written and make
  // given write access where it led.
  ks::write_file(s.path / "link.patch", "diff --git a/ks-out b/ks-out\nnew file mode 120000\n--- /dev/null\n+++ b/ks-out\n"
                                        "@@ -0,0 +1 @@\n+" + victim.string() + "\n\\ No newline at end of file\n");
  r.patches = {(s.path / "link.patch").string()};
  auto refused = user_error_of([&] { ks::kernel::build_arm(r, ks::kernel::Progress::silent()); });
  CHECK(contains(refused, "makes ks-out at the top of the kernel tree"));
  CHECK(entries(victim) == std::set<std::string>{"existing"});
  // A file name of the diff that makes patch(1) print "patching file <any path>": root set
  // that file's time (Low, same pass). The build goes on; the file outside is untouched.
  const auto quoted = "\"b/foo\\npatching file " + (victim / "existing").string() + "\\nbar\"";
  ks::write_file(s.path / "name.patch", "diff --git " + quoted + " " + quoted + "\nnew file mode 100644\n--- /dev/null\n+++ " +
                                            quoted + "\n@@ -0,0 +1 @@\n+x\n");
  r.patches = {(s.path / "name.patch").string()};
  auto built = ks::kernel::build_arm(r, ks::kernel::Progress::silent());
  CHECK(built.identity["build"]["mode"] == "incremental");
  CHECK(fs::last_write_time(victim / "existing") == old_time);
  CHECK(entries(victim) == std::set<std::string>{"existing"});
  // Thirty-third attack: a patch that makes a directory a link (patch(1) makes it, from git's
  // mode 120000) and names a file beyond it, in a pair of headers patch(1) passes over: root
  // set that file's time through the link.
  ks::write_file(s.path / "through.patch", "diff --git a/evil b/evil\nnew file mode 120000\n--- /dev/null\n+++ b/evil\n"
                                           "@@ -0,0 +1 @@\n+" + victim.string() + "\n\\ No newline at end of file\n"
                                           "--- a/evil/existing\n+++ b/evil/existing\n");
  r.patches = {(s.path / "through.patch").string()};
  r.arm = "through";
  ks::kernel::build_arm(r, ks::kernel::Progress::silent());
  CHECK(fs::last_write_time(victim / "existing") == old_time);
  CHECK(entries(victim) == std::set<std::string>{"existing"});
}

TEST_CASE("as root, an archive's device nodes and links, and a set-ID program make left, are never kept",
          "[build][hostile]") {
  KS_SKIP_UNLESS(::geteuid() == 0, "make runs confined only for root, and only root makes device nodes");
  KS_SKIP_UNLESS(ks::proc::have_program("bwrap"), "needs bwrap (apt-get install bubblewrap)");
  for (auto tool : {"make", "tar", "patch", "cp", "mknod"}) KS_SKIP_UNLESS(ks::proc::have_program(tool), std::string("needs ") + tool);
  Scratch s;
  auto build = [](const ks::kernel::BuildRequest& r) {
    return user_error_of([&] { ks::kernel::build_arm(r, ks::kernel::Progress::silent()); });
  };
  auto kernels_in = [](const fs::path& cache) {
    size_t n = 0;
    for (auto& e : entries(cache / "build")) n += ks::starts_with(e, "6.1.0");
    return n;
  };
  // Twenty-eighth attack: make runs as uid 0 and owns what it makes: a setuid-root copy of a
  // program, left in the cache for anyone (the cache's directories were 0755).
  Miniature setuid(s.path / "setuid", "\t@cp /bin/true $(O)/.tool; chmod 4755 $(O)/.tool\n");
  auto refused = build(setuid.request("control"));
  CHECK(contains(refused, "a set-user-ID or set-group-ID file"));
  CHECK(kernels_in(setuid.dir / "cache") == 0);
  for (auto dir : {"build", "source"})
    CHECK((fs::status(setuid.dir / "cache" / dir).permissions() & (fs::perms::group_all | fs::perms::others_all)) ==
          fs::perms::none);
  // Twenty-ninth and thirtieth attacks: a control build wrote ccache's directory (patched
  // ones only read it), and an archive's Makefile left a setuid shell there, or swapped one
  // file's cached object for another's for every later build; only the Debian package's own
  // source writes it now. And make's output, kept when a build fails, holds whatever make
  // read, in a directory anyone could read.
  if (ks::proc::have_program("ccache")) {
    Miniature ccache(s.path / "ccache", "\t@cp /bin/true $(CCACHE_DIR)/sh && chmod 4755 $(CCACHE_DIR)/sh\n");
    auto r = ccache.request("control");
    r.use_ccache = true;
    CHECK(contains(build(r), "kernel build failed"));  // cp: Read-only file system
    CHECK_FALSE(fs::exists(ccache.dir / "ccache/sh"));
    // Root's and the build uid's (which reads it, by its group) alone.
    CHECK((fs::status(ccache.dir / "ccache").permissions() & (fs::perms::group_write | fs::perms::others_all)) == fs::perms::none);
  } else {
    std::cout << "SKIPPED (part): a Makefile writing ccache's directory needs ccache\n";
  }
  // Thirty-second attack: uid 0 writes the host's sysctls without a capability, and bwrap left
  // /proc/sys writable (kernel.core_pattern names a program the kernel runs as root). The
  // recipe writes back the value it reads, and fails the build if it could.
  Miniature sysctl(s.path / "sysctl", "\t@if cat /proc/sys/kernel/core_pattern > /proc/sys/kernel/core_pattern; "
                                      "then echo 'error: /proc/sys is writable'; false; fi\n");
  CHECK(build(sysctl.request("control")) == "(no UserError)");
  // Next to it: make runs as no account at all, so what root alone may do (a sysctl, a root
  // socket, /etc/shadow, a set-ID or device file) is beyond it; root takes the objects back.
  Miniature uid(s.path / "uid", "\t@if [ \"$$(id -u)\" = 0 ]; then echo 'error: make ran as root'; false; fi\n"
                                "\t@if head -c1 /etc/shadow >/dev/null 2>&1; then echo 'error: make read /etc/shadow'; false; fi\n"
                                "\t@touch $(O)/made-by-make\n"
                                // and within bounds: its processes, its /tmp (thirty-fourth attack)
                                "\t@if [ \"$$(awk '/^Max processes/ {print $$3}' /proc/self/limits)\" != 4096 ]; then echo 'error: processes unbounded'; false; fi\n"
                                "\t@if [ \"$$(df -k --output=size /tmp | tail -1)\" -gt 1048576 ]; then echo 'error: /tmp unbounded'; false; fi\n");
  CHECK(build(uid.request("control")) == "(no UserError)");
  size_t made = 0, roots = 0;
  for (auto& e : fs::recursive_directory_iterator(uid.dir / "cache/build")) {
    struct stat st {};
    REQUIRE(::lstat(e.path().c_str(), &st) == 0);
    made += e.path().filename() == "made-by-make";
    roots += st.st_uid == 0 && st.st_gid == 0;
    if (st.st_uid != 0) FAIL_CHECK(e.path().string() + " belongs to uid " + std::to_string(st.st_uid));
  }
  CHECK(made == 1);
  CHECK(roots > 0);
  // Thirty-eighth attack: a cache entry someone else could change (a cache that had wider
  // permissions once) was taken at its word: a kernel swapped into a build directory was a
  // cache hit, and a source.json's version put the next build outside the cache.
  fs::path built_dir;
  for (auto& e : fs::directory_iterator(uid.dir / "cache/build"))
    if (ks::starts_with(e.path().filename().string(), "6.1.0")) built_dir = e.path();
  REQUIRE(!built_dir.empty());
  CHECK(build(uid.request("control")) == "(no UserError)");  // a cache hit
  ks::write_file(built_dir / "bzImage", "another kernel\n");
  CHECK(contains(build(uid.request("control")), "is not a kernel ksandwich built there, or was changed since"));
  fs::remove_all(built_dir);
  fs::path source_entry;
  for (auto& e : fs::directory_iterator(uid.dir / "cache/source"))
    if (fs::exists(e.path() / "source.json")) source_entry = e.path();
  REQUIRE(!source_entry.empty());
  REQUIRE(::chown((source_entry / "source.json").c_str(), 65534, 65534) == 0);
  CHECK(contains(build(uid.request("control")), "is not one ksandwich made, or was changed since"));
  // Thirty-ninth: an entry someone made while the source was unpacked (here, one without a
  // tree) is checked when the rename finds it, never built as the source.
  fs::remove_all(source_entry / "tree");
  CHECK(contains(build(uid.request("control")), "is in the way, and is not one ksandwich made"));
  Miniature fails(s.path / "fails", "\t@echo 'error: it read a secret'; false\n");
  CHECK(contains(build(fails.request("control")), "it read a secret"));
  // Thirty-ninth: links planted in logs/ under the names the next failed build's log may take
  // (its key's, for each second of the next two minutes): replaced, never written through.
  std::string kept;
  for (auto& e : fs::directory_iterator(fails.dir / "cache/logs")) kept = e.path().filename().string();
  REQUIRE(kept.find("-failed-") != std::string::npos);
  const auto victim = s.path / "victim";
  ks::write_file(victim, "root's own\n");
  fs::permissions(victim, fs::perms::owner_read | fs::perms::owner_write);
  const auto now = std::chrono::system_clock::now();
  for (int i = 0; i < 120; ++i) {
    auto t = std::chrono::system_clock::to_time_t(now + std::chrono::seconds(i));
    std::tm tm{};
    gmtime_r(&t, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H-%M-%SZ", &tm);
    const auto name = fails.dir / "cache/logs" / (kept.substr(0, kept.find("-failed-") + 8) + stamp + ".log");
    if (!fs::exists(name)) fs::create_symlink(victim, name);  // the first failure's own, this second
  }
  CHECK(contains(build(fails.request("control")), "it read a secret"));
  CHECK(ks::read_file(victim) == "root's own\n");
  CHECK(fs::status(victim).permissions() == (fs::perms::owner_read | fs::perms::owner_write));
  CHECK((fs::status(fails.dir / "cache/logs").permissions() & (fs::perms::group_all | fs::perms::others_all)) == fs::perms::none);
  // tar makes an archive's device nodes as root: one in the source cache anyone could open.
  Miniature device(s.path / "device");
  ks::proc::run_checked(command({"mknod", "-m", "666", (device.dir / "linux-6.1/mem").string(), "c", "1", "1"}));
  CHECK(contains(build(device.request("control")), "a device node, FIFO or socket"));
  CHECK(entries(device.dir / "cache/source").empty());
  // Thirty-third attack: an archive of 150 KB that unpacked to 1 GiB, kept in the source cache.
  // Here 9 GiB of one sparse file, in 164 bytes: refused from tar's listing, nothing unpacked.
  Miniature bomb(s.path / "bomb");
  auto bombed = bomb.request("control");
  bombed.source.path = (bomb.dir / "sparse.tar.gz").string();
  ks::write_file(bomb.dir / "linux-6.1/zeros", "");
  fs::resize_file(bomb.dir / "linux-6.1/zeros", std::uintmax_t(9) << 30);
  ks::proc::run_checked(command({"tar", "-S", "-czf", bombed.source.path, "-C", bomb.dir.string(), "linux-6.1"}));
  fs::remove(bomb.dir / "linux-6.1/zeros");
  CHECK(contains(build(bombed), "would unpack to more than any kernel source: more than 8 GiB"));
  CHECK(entries(bomb.dir / "cache/source").empty());
  // Thirty-fourth attack: members whose names imply thousands of directories each (11 made
  // 18,013); here 600 of 1,800 levels, over a million, in a few kilobytes. And thirty-fifth:
  // a time too large for a date shifted the words of tar's long listing, and such members
  // went uncounted.
  ks::proc::run_checked(command({"python3", "-c",
                                 "import io, sys, tarfile\n"
                                 "with tarfile.open(sys.argv[1], 'w:gz', format=tarfile.PAX_FORMAT) as t:\n"
                                 "    for i in range(600):\n"
                                 "        m = tarfile.TarInfo('linux-6.1/d%d/' % i + 'a/' * 1800 + 'f')\n"
                                 "        m.mtime = 10 ** 18\n"
                                 "        t.addfile(m, io.BytesIO())\n",
                                 (bomb.dir / "deep.tar.gz").string()}));
  bombed.source.path = (bomb.dir / "deep.tar.gz").string();
  CHECK(contains(build(bombed), "more than 1000000 files and directories"));
  CHECK(entries(bomb.dir / "cache/source").empty());
  // Thirty-sixth attack: a Makefile's VERSION named the build's directory, ../.. anywhere; its
  // make linked arch/ to a directory of root's, whose bzImage became the kernel; its release
  // held a terminal's escapes, printed as they were.
  Miniature escape(s.path / "escape");
  ks::write_file(escape.dir / "linux-6.1/Makefile", "VERSION = ../../../escaped\n" + ks::read_file(escape.dir / "linux-6.1/Makefile"));
  CHECK(contains(build(escape.request("control")), "is not a kernel release"));
  CHECK_FALSE(fs::exists(s.path / "escaped.6.1.0-ks-control"));
  for (auto& e : entries(s.path)) CHECK_FALSE(ks::starts_with(e, "escaped"));
  const auto secret = s.path / "rootonly";
  fs::create_directories(secret / "x86/boot");
  ks::write_file(secret / "x86/boot/bzImage", "root's secret\n");
  Miniature linked(s.path / "linked", "\t@rm -rf $(O)/arch && ln -s " + secret.string() + " $(O)/arch\n");
  CHECK(contains(build(linked.request("control")), "left arch/x86/boot/bzImage unreadable"));
  CHECK(kernels_in(linked.dir / "cache") == 0);
  Miniature escapes(s.path / "escapes", "\t@printf '6.1.0\\033]0;pwned\\007\\n' > $(O)/include/config/kernel.release\n");
  CHECK(contains(build(escapes.request("control")), "which is not a kernel release"));
  CHECK(kernels_in(escapes.dir / "cache") == 0);
  // Thirty-seventh: the Kconfig scan that explains a symbol Kconfig dropped read a root-only
  // file through the archive's directory link (and quoted it).
  Miniature kconfig(s.path / "kconfig");
  ks::write_file(secret / "Kconfig", "config FOO\n\tbool \"foo\"\n\tdepends on ROOT_ONLY_SECRET\n");
  ks::write_file(kconfig.dir / "linux-6.1/Kconfig", "source \"sec/Kconfig\"\n");
  auto makefile_text = ks::read_file(kconfig.dir / "linux-6.1/Makefile");  // olddefconfig drops every symbol
  makefile_text.replace(makefile_text.find("tinyconfig olddefconfig:"), 24, "olddefconfig:\n\t@: > $(O)/.config\ntinyconfig:");
  ks::write_file(kconfig.dir / "linux-6.1/Makefile", makefile_text);
  fs::create_directory_symlink(secret, kconfig.dir / "linux-6.1/sec");
  ks::write_file(kconfig.dir / "foo.config", "CONFIG_FOO=y\n");
  auto asked = kconfig.request("control");
  asked.config.fragments = {(kconfig.dir / "foo.config").string()};
  auto dropped = build(asked);
  CHECK(contains(dropped, "CONFIG_FOO=y"));
  CHECK_FALSE(contains(dropped, "ROOT_ONLY_SECRET"));
  // An archive whose one entry is a link to a directory of root's holding a kernel Makefile:
  // the cached tree was that link, and root's patch(1) edited the files it led to.
  Miniature target(s.path / "target");
  fs::create_directories(s.path / "link");
  fs::create_directory_symlink(target.dir / "linux-6.1", s.path / "link/linux-6.1");
  const auto makefile = ks::read_file(target.dir / "linux-6.1/Makefile");
  ks::write_file(s.path / "edit.patch", "--- a/Makefile\n+++ b/Makefile\n@@ -1 +1 @@\n-VERSION = 6\n+VERSION = 7\n");
  auto r = target.request("patched", {(s.path / "edit.patch").string()});
  ks::proc::run_checked(command({"tar", "-czf", (s.path / "link.tar.gz").string(), "-C", (s.path / "link").string(), "linux-6.1"}));
  r.source.path = (s.path / "link.tar.gz").string();
  CHECK(contains(build(r), "is not a kernel source"));
  CHECK(ks::read_file(target.dir / "linux-6.1/Makefile") == makefile);
  // A link in the archive to a file outside the tree, named by a patch: never copied (a link
  // to /proc/kcore would have filled the disk); the patch does not apply.
  Miniature outside(s.path / "outside");
  ks::write_file(s.path / "secret", "secret\n");
  fs::create_symlink(s.path / "secret", outside.dir / "linux-6.1/k");
  ks::write_file(s.path / "k.patch", "--- a/k\n+++ b/k\n@@ -1 +1 @@\n-secret\n+public\n");
  CHECK(contains(build(outside.request("patched", {(s.path / "k.patch").string()})), "does not apply"));
  CHECK(ks::read_file(s.path / "secret") == "secret\n");
}

TEST_CASE("bad build input is a clear error, exit 2, and leaves nothing in the cache",
          "[build][bad-input]") {
  KS_SKIP_UNLESS(have_default_source(), "needs /usr/src/linux-source-6.1.tar.xz (apt-get install linux-source-6.1)");
  require_toolchain();
  Scratch s;
  auto cache = test_cache();
  ks::source::prepare({}, cache);  // the source itself is fine (and unpacked once)
  auto builds_before = entries(cache / "build");
  auto sources_before = entries(cache / "source");
  auto quick = ks::kernel::Progress::silent();

  // A missing source.
  auto r = request("control");
  r.source = {"tarball", (s.path / "linux-absent.tar.xz").string(), ""};
  auto missing_source = user_error_of([&] { ks::kernel::build_arm(r, quick); });
  CHECK(contains(missing_source, "kernel source not found"));
  CHECK(contains(missing_source, "linux-absent.tar.xz"));

  // A symbol that cannot be satisfied: TMPFS depends on SHMEM, which the fragment turns off.
  ks::write_file(s.path / "broken.config", "CONFIG_TMPFS=y\n# CONFIG_SHMEM is not set\n");
  r = request("control");
  r.config.fragments = {"btrfs-bench.config", (s.path / "broken.config").string()};
  auto unsatisfiable = user_error_of([&] { ks::kernel::build_arm(r, quick); });
  INFO(unsatisfiable);
  CHECK(contains(unsatisfiable, "CONFIG_TMPFS=y (broken.config:1) came out n"));
  CHECK(contains(unsatisfiable, "depends on SHMEM (fs/Kconfig:"));
  CHECK(contains(unsatisfiable, "SHMEM=n"));

  // A patch that does not apply names the file and the hunk.
  auto good = ks::read_file(patch_file("btrfs-drop-sb-nosec.patch"));
  auto stale = good;
  auto at = stale.find("\tbdev = fs_devices->latest_dev->bdev;");
  REQUIRE(at != std::string::npos);
  stale.replace(at, 5, "\tBDEV");
  ks::write_file(s.path / "stale.patch", stale);
  r = request("patched", {(s.path / "stale.patch").string()});
  auto stale_error = user_error_of([&] { ks::kernel::build_arm(r, quick); });
  INFO(stale_error);
  CHECK(contains(stale_error, "stale.patch does not apply to 6.1.192"));
  CHECK(contains(stale_error, "hunk #1 of fs/btrfs/super.c does not apply"));

  // A patch file that does not exist.
  r = request("patched", {(s.path / "absent.patch").string()});
  auto absent = user_error_of([&] { ks::kernel::build_arm(r, quick); });
  CHECK(contains(absent, "patch file not found"));
  CHECK(contains(absent, "absent.patch"));

  // No broken entry: the build cache holds what it held before, no temporaries.
  CHECK(entries(cache / "build") == builds_before);
  CHECK(entries(cache / "source") == sources_before);

  // The CLI turns each into exit 2 with the message on stderr.
  KS_SKIP_UNLESS(fs::exists(ks::test::ksandwich_binary()), "ksandwich binary not built");
  std::string err;
  CHECK(run_cli({"build", "--cache", cache.string(), "--source",
                 (s.path / "linux-absent.tar.xz").string()}, &err) == 2);
  CHECK(contains(err, "kernel source not found"));
  CHECK(run_cli({"build", "--cache", cache.string(), "--config-fragment", "btrfs-bench.config",
                 "--config-fragment", (s.path / "broken.config").string()}, &err) == 2);
  CHECK(contains(err, "CONFIG_TMPFS=y"));
  CHECK(run_cli({"build", "--cache", cache.string(), "--arm", "patched", "--patch",
                 (s.path / "stale.patch").string()}, &err) == 2);
  CHECK(contains(err, "hunk #1 of fs/btrfs/super.c"));
  CHECK(run_cli({"build", "--cache", cache.string(), "--arm", "patched", "--patch",
                 (s.path / "absent.patch").string()}, &err) == 2);
  CHECK(contains(err, "patch file not found"));
  CHECK(entries(cache / "build") == builds_before);
}

// Its name is tests/CMakeLists.txt's KSANDWICH_DEFAULT_KERNEL_TEST: the first test started.
TEST_CASE("real kernel: full control build, cache hit, incremental patched build, matched audit",
          "[build][kernel][default-kernel]") {
  KS_SKIP_UNLESS(have_default_source(), "needs /usr/src/linux-source-6.1.tar.xz (apt-get install linux-source-6.1)");
  require_toolchain();
  auto cache = test_cache();
  // A real full build every run (ccache may speed it up): the kernels this case builds leave
  // the cache, and only they, so the other tests' kernels stay built.
  for (auto r : {request("control"), request("patched", {"btrfs-drop-sb-nosec.patch"}),
                 request("csum", {"btrfs-sync-data-csum.patch"}), request("noop", {"btrfs-noop-comment.patch"})})
    if (auto cached = ks::kernel::look_up(r).cached) fs::remove_all(cached->build_dir);
  ks::kernel::Progress progress(stderr);

  auto control = ks::kernel::build_arm(request("control"), progress);
  CHECK(!control.cache_hit);
  CHECK(control.kernel_release == "6.1.192-ks-control");
  CHECK(fs::file_size(control.bzimage) > 1'000'000);
  auto& cb = control.identity["build"];
  CHECK(cb["mode"] == "full");
  CHECK(control.identity["bzimage"]["sha256"] == ks::sha256_file(control.bzimage));
  CHECK(control.identity["config"]["symbols_checked"].get<int>() > 50);
  double full_seconds = cb["seconds"].get<double>();
  auto full_compiled = cb["compiled"].get<size_t>();
  CHECK(full_compiled > 500);

  // Nothing changed: the cache answers in seconds, with the same kernel.
  auto again = ks::kernel::build_arm(request("control"), progress);
  CHECK(again.cache_hit);
  CHECK(again.seconds < 30);
  CHECK(again.identity == control.identity);

  // The patched arm starts from the control's objects and rebuilds what the patch touches.
  auto patched = ks::kernel::build_arm(
      request("patched", {"btrfs-drop-sb-nosec.patch"}), progress);
  auto& pb = patched.identity["build"];
  CHECK(!patched.cache_hit);
  CHECK(patched.kernel_release == "6.1.192-ks-patched");
  CHECK(pb["mode"] == "incremental");
  CHECK(pb["reused_from"] == control.build_dir.string());
  auto compiled = pb["compiled_files"].get<std::vector<std::string>>();
  CHECK(std::find(compiled.begin(), compiled.end(), "fs/btrfs/super.o") != compiled.end());
  CHECK(pb["compiled"].get<size_t>() < full_compiled / 20);
  double patched_seconds = pb["seconds"].get<double>();
  CHECK(patched_seconds < full_seconds);
  WARN("full control build " << ks::kernel::Progress::format_duration(full_seconds) << " ("
       << full_compiled << " files), cache hit " << again.seconds << " s, patched incremental "
       << ks::kernel::Progress::format_duration(patched_seconds) << " (" << pb["compiled"]
       << " files: " << ks::join(compiled, " ") << ")");

  // The patch reached the patched tree only: the cached source and the control are intact.
  auto nosec = "btrfs_set_super, flags | SB_NOSEC,";
  auto src = ks::source::prepare({}, cache);
  CHECK(contains(ks::read_file(src.tree / "fs/btrfs/super.c"), nosec));
  CHECK(contains(ks::read_file(control.build_dir / "linux/fs/btrfs/super.c"), nosec));
  CHECK(!contains(ks::read_file(patched.build_dir / "linux/fs/btrfs/super.c"), nosec));

  // Audit: PASS everywhere; only the patch identity, release and bzImage differ.
  auto lines = ks::kernel::audit_lines(control.identity, patched.identity, false);
  for (auto& l : lines) {
    INFO(l.row.field << ": " << l.row.control << " | " << l.row.patched);
    CHECK(l.row.status == "PASS");
    bool may_differ = l.row.field == "patches" || l.row.field == "kernel release" ||
                      l.row.field == "bzImage SHA-256";
    CHECK((l.row.control == l.row.patched) != may_differ);
  }
  CHECK(patched.identity["patches"][0]["subject"] ==
        "[PATCH] btrfs: drop SB_NOSEC from the superblock flags");

  // Corrupted inputs are caught: another config fragment, other compiler flags.
  Scratch s;
  ks::write_file(s.path / "extra.config", "CONFIG_BTRFS_FS_POSIX_ACL=y\n");
  auto other_config = request("patched", {"btrfs-drop-sb-nosec.patch"});
  other_config.config.fragments.push_back((s.path / "extra.config").string());
  auto config_audit = ks::kernel::audit_lines(
      control.identity, ks::kernel::preflight(other_config, progress), false);
  for (auto& l : config_audit)
    CHECK(l.row.status == (l.row.field == "config SHA-256 (normalized)" ? "FAIL" : "PASS"));

  auto other_flags = request("patched", {"btrfs-drop-sb-nosec.patch"});
  other_flags.make_variables = {"KCFLAGS=-fno-inline-functions-called-once"};
  auto flags_audit = ks::kernel::audit_lines(
      control.identity, ks::kernel::preflight(other_flags, progress), false);
  for (auto& l : flags_audit)
    CHECK(l.row.status == (l.row.field == "compiler flags (make variables)" ? "FAIL" : "PASS"));

  // The other shipped patches build too (incrementally, from the same control).
  for (auto [arm, file] : {std::pair{"csum", "btrfs-sync-data-csum.patch"},
                           std::pair{"noop", "btrfs-noop-comment.patch"}}) {
    auto k = ks::kernel::build_arm(request(arm, {file}), progress);
    CHECK(k.kernel_release == std::string("6.1.192-ks-") + arm);
    CHECK(k.identity["build"]["mode"] == "incremental");
    CHECK(ks::kernel::all_pass(ks::kernel::audit_lines(control.identity, k.identity, false)));
  }
}

TEST_CASE("an mbox series as the patched arm: subjects and Message-IDs reach bundle and reply",
          "[build][kernel][mbox]") {
  KS_SKIP_UNLESS(have_default_source(), "needs /usr/src/linux-source-6.1.tar.xz (apt-get install linux-source-6.1)");
  require_toolchain();
  // At a path named by its content (as run --message-id keeps a series): the kernel's key
  // holds the patch's path, so a rerun finds this build instead of adding another.
  auto mbox = ks::source::keep_in_cache(test_cache(), "threads", series_mbox(), ".mbox");
  ks::kernel::Progress progress(stderr);

  auto control = ks::kernel::build_arm(request("control"), progress);
  auto patched = ks::kernel::build_arm(request("patched", {mbox.string()}), progress);
  auto& patches = patched.identity["patches"];
  REQUIRE(patches.size() == 2);
  // Applied in series order although the mailbox holds 2/2 before 1/2.
  CHECK(patches[0]["subject"] == "[PATCH 1/2] btrfs: drop SB_NOSEC from the superblock flags");
  CHECK(patches[0]["message_id"] == "<1-nosec.ksandwich@localhost.invalid>");
  CHECK(patches[1]["subject"] == "[PATCH 2/2] btrfs: fix a typo in a comment in super.c");
  CHECK(patches[1]["message_id"] == "<2-noop.ksandwich@localhost.invalid>");
  CHECK(patches[0]["author"] == "ksandwich test patches <ksandwich@localhost.invalid>");
  CHECK(patched.identity["cover_letter"]["message_id"] == "<cover.ksandwich@localhost.invalid>");
  auto super_c = ks::read_file(patched.build_dir / "linux/fs/btrfs/super.c");
  CHECK(!contains(super_c, "flags | SB_NOSEC,"));
  CHECK(contains(super_c, "also serves as a tag"));

  ks::evidence::Bundle bundle;
  bundle.experiment_name = "mbox-series";
  bundle.backend = "qemu";
  bundle.verdict = "NO_CHANGE";
  bundle.builds = ks::kernel::builds_json(control.identity, patched.identity, false);
  CHECK(bundle.builds["matched"] == true);
  auto text = ks::evidence::to_json(bundle).dump();
  for (auto part : {"[PATCH 1/2] btrfs: drop SB_NOSEC from the superblock flags",
                    "[PATCH 2/2] btrfs: fix a typo in a comment in super.c",
                    "<1-nosec.ksandwich@localhost.invalid>", "<2-noop.ksandwich@localhost.invalid>"})
    CHECK(contains(text, part));

  auto report = ks::report::text(bundle, {"Jane Tester <jane@example.org>"});
  INFO(report);
  CHECK(contains(report, "Subject: [PATCH 1/2] btrfs: drop SB_NOSEC from the superblock flags"));
  CHECK(contains(report, "Message-ID: <1-nosec.ksandwich@localhost.invalid>"));
  CHECK(contains(report, "Subject: [PATCH 2/2] btrfs: fix a typo in a comment in super.c"));
  CHECK(contains(report, "Message-ID: <2-noop.ksandwich@localhost.invalid>"));
  CHECK(contains(report, "Tested-by: Jane Tester <jane@example.org>"));
}

// Cleanup replays a killed run's journal: last change first, each once, never touching
// what no longer matches. The machine lock names its holder and dies with it. No root: a
// temporary directory stands in for /sys, /dev/shm and /run/ksandwich.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <thread>
#include <chrono>

#include "boot/knobs.hpp"
#include "pipeline/host_changes.hpp"
#include "proc/runner.hpp"
#include "support/killed_process.hpp"
#include "support/temp_dir.hpp"
#include "util/hash.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/journal.hpp"

namespace fs = std::filesystem;
namespace journal = ks::journal;
using ks::pipeline::cleanup_run;
using ks::pipeline::UndoRules;
using ks::test::in_killed_process;

namespace {

UndoRules rules_for(const fs::path& root) {
  UndoRules r;
  r.mount_roots = {root};
  r.file_roots = {root};
  r.knobs.roots = {root};
  r.knobs.require_kernel_fs = false;
  r.require_tracefs = false;
  return r;
}

struct Run {
  ks::test::TempDir tmp{"ks-host-changes"};
  fs::path out = tmp.path / "out";
  Run() { fs::create_directories(out / "logs"); }
  fs::path journal() const { return ks::pipeline::journal_file(out); }
  fs::path state() const { return tmp.path / "state"; }
  // The key cleanup_run(out, ..., state()) reads the journal with.
  std::string key() const {
    fs::create_directories(state());
    return journal::load_key(state());
  }
  fs::path file(const std::string& name) const { return tmp.path / name; }
  // Registers this process as the run in out, as HostChanges::open_journal does: cleanup
  // undoes only what registered runs made.
  void registered() const {
    fs::create_directories(state() / "active");
    ks::write_file(state() / "active" / (std::to_string(getpid()) + ".json"),
                   nlohmann::json{{"pid", getpid()},
                                  {"pid_start", journal::process_start(getpid()).value_or(0)},
                                  {"dir", out.string()}}.dump());
  }
};

// A file made as a run makes one: journaled, created, then its identity journaled.
void made_file(const fs::path& path, const std::string& content) {
  auto seq = journal::record("file", {{"path", path.string()}});
  ks::write_file(path, content);
  journal::amend(seq, journal::identity_of(path));
}

// A run killed (as under SIGKILL) holding the file knob, "old\n" before, at "new"; MORE
// journals what else it did first.
void killed_holding_knob(const Run& run, const std::function<void()>& more = [] {}) {
  ks::write_file(run.file("knob"), "old\n");
  in_killed_process([&] {
    journal::Active active(run.journal(), run.key());
    run.registered();
    new ks::boot::KnobSetting({{run.file("knob").string(), "new"}}, rules_for(run.tmp.path).knobs);
    more();
  });
}

// The "how" of every undone line, in the order cleanup wrote them.
std::vector<uint64_t> undone_order(const fs::path& journal_file) {
  std::vector<uint64_t> seqs;
  for (auto& line : ks::split(ks::read_file(journal_file), '\n')) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("undone")) seqs.push_back(j["undone"].get<uint64_t>());
  }
  return seqs;
}

}  // namespace

TEST_CASE("cleanup: undoes a killed run's changes last first, byte for byte, and only once") {
  Run run;
  ks::write_file(run.file("knob"), std::string("128\n\0x", 6));
  in_killed_process([&] {
    journal::Active active(run.journal(), run.key());
    run.registered();
    made_file(run.file("ksandwich-a"), "a");
    // Never destroyed: the process dies holding the knob, as under SIGKILL.
    new ks::boot::KnobSetting({{run.file("knob").string(), "4096"}}, rules_for(run.tmp.path).knobs);
    made_file(run.file("ksandwich-c"), "c");
  });
  CHECK(ks::read_file(run.file("knob")) == "4096");
  REQUIRE(journal::read(run.journal(), run.key()).pending().size() == 3);

  auto report = cleanup_run(run.out, rules_for(run.tmp.path), run.tmp.path / "state");
  INFO(ks::join(report.lines, "\n"));
  CHECK(report.ok());
  CHECK(report.undone == 3);
  CHECK_FALSE(fs::exists(run.file("ksandwich-a")));
  CHECK_FALSE(fs::exists(run.file("ksandwich-c")));
  CHECK(ks::read_file(run.file("knob")) == std::string("128\n\0x", 6));
  CHECK(undone_order(run.journal()) == std::vector<uint64_t>{3, 2, 1});

  // Again: nothing pending, nothing done, the journal unchanged.
  auto before = ks::read_file(run.journal());
  auto again = cleanup_run(run.out, rules_for(run.tmp.path), run.tmp.path / "state");
  CHECK(again.ok());
  CHECK(again.undone + again.skipped == 0);
  CHECK(ks::read_file(run.journal()) == before);
}

TEST_CASE("cleanup: a finished run's journal with its undone lines cut off undoes nothing again") {
  Run run;
  killed_holding_knob(run);
  auto sealed = ks::read_file(run.journal());  // the change, before cleanup marked it undone
  REQUIRE(cleanup_run(run.out, rules_for(run.tmp.path), run.state()).undone == 1);
  CHECK(ks::read_file(run.file("knob")) == "old\n");
  CHECK(ks::pipeline::dead_runs(run.state()).empty());  // cleaned up: unregistered

  // Whoever can write the run's directory cuts the "undone" line off and sets the knob to
  // the run's value: the journal verifies, but no registered run has anything left.
  ks::write_file(run.journal(), sealed);
  ks::write_file(run.file("knob"), "new\n");
  REQUIRE(journal::read(run.journal(), run.key()).pending().size() == 1);
  auto report = cleanup_run(run.out, rules_for(run.tmp.path), run.state());
  INFO(ks::join(report.lines, "\n"));
  CHECK(report.ok());
  CHECK(report.undone + report.skipped == 0);
  CHECK_THAT(ks::join(report.lines, "\n"), Catch::Contains("no run registered"));
  CHECK(ks::read_file(run.file("knob")) == "new\n");
}

TEST_CASE("cleanup: skips what no longer matches and leaves it alone") {
  Run run;
  killed_holding_knob(run, [&] {
    journal::record("mount", {{"target", (run.tmp.path / "mnt-gone").string()}, {"source", "/dev/zram9"},
                              {"fstype", "btrfs"}});
    journal::record("file", {{"path", run.file("ksandwich-never-made").string()}});
  });
  ks::write_file(run.file("knob"), "someone else's\n");  // changed after the run died

  auto report = cleanup_run(run.out, rules_for(run.tmp.path), run.tmp.path / "state");
  INFO(ks::join(report.lines, "\n"));
  CHECK(report.ok());
  CHECK(report.undone == 0);
  CHECK(report.skipped == 3);
  CHECK(ks::read_file(run.file("knob")) == "someone else's\n");
  CHECK_THAT(ks::join(report.lines, "\n"), Catch::Contains("not mounted") && Catch::Contains("someone else"));
  CHECK(journal::read(run.journal(), run.key()).pending().empty());
}

TEST_CASE("cleanup: refuses what lies outside its places and stops there, keeping older entries") {
  Run run;
  ks::write_file(run.file("ksandwich-older"), "x");
  ks::test::TempDir elsewhere("ks-elsewhere");
  ks::write_file(elsewhere.path / "ksandwich-precious", "data");
  in_killed_process([&] {
    journal::Active active(run.journal(), run.key());
    run.registered();
    journal::record("file", {{"path", run.file("ksandwich-older").string()}});
    journal::record("file", {{"path", (elsewhere.path / "ksandwich-precious").string()}});  // tampered
  });
  auto report = cleanup_run(run.out, rules_for(run.tmp.path), run.tmp.path / "state");
  CHECK_FALSE(report.ok());
  CHECK_THAT(report.failure, Catch::Contains("ksandwich-precious"));
  CHECK(fs::exists(elsewhere.path / "ksandwich-precious"));
  CHECK(fs::exists(run.file("ksandwich-older")));  // not reached: it was made before
  CHECK(journal::read(run.journal(), run.key()).pending().size() == 2);
}

TEST_CASE("cleanup: refuses while the run's process is alive") {
  Run run;
  int go[2];
  REQUIRE(pipe(go) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(go[1]);
    {
      journal::Active active(run.journal(), run.key());
      run.registered();
      journal::record("file", {{"path", run.file("ksandwich-live").string()}});
    }
    char c;
    (void)!read(go[0], &c, 1);  // alive until the parent lets go
    _exit(0);
  }
  close(go[0]);
  for (int i = 0; i < 200 && journal::read(run.journal(), run.key()).entries.empty(); ++i) usleep(10000);
  CHECK_THROWS_WITH(cleanup_run(run.out, rules_for(run.tmp.path), run.tmp.path / "state"),
                    Catch::Contains("still running") && Catch::Contains(std::to_string(pid)));
  close(go[1]);
  waitpid(pid, nullptr, 0);
  CHECK(cleanup_run(run.out, rules_for(run.tmp.path), run.tmp.path / "state").ok());
}

TEST_CASE("run lock: runs on the instruction clock share the machine, a run on the wall clock has it alone") {
  Run run;
  auto state = run.tmp.path / "state";
  ks::experiment::Experiment e;
  e.backend = "qemu";
  {
    ks::pipeline::HostChanges a(state, run.tmp.path / "a", e, false, true);
    ks::pipeline::HostChanges b(state, run.tmp.path / "b", e, false, true);  // no refusal
    CHECK_THROWS_WITH(ks::pipeline::HostChanges(state, run.tmp.path / "wall", e, false),
                      Catch::Contains("another ksandwich run holds this machine") &&
                          Catch::Contains("instruction clock"));
  }
  {
    ks::pipeline::HostChanges wall(state, run.tmp.path / "wall", e, false);
    CHECK_THROWS_WITH(ks::pipeline::HostChanges(state, run.tmp.path / "a", e, false, true),
                      Catch::Contains("pid " + std::to_string(getpid())) && Catch::Contains((run.tmp.path / "wall").string()));
  }
  ks::pipeline::HostChanges again(state, run.tmp.path / "c", e, false, true);  // both gone with their holders
}

TEST_CASE("run lock: a second run meets it by name, it dies with its holder, leftovers are listed") {
  Run run;
  auto state = run.tmp.path / "state";
  ks::experiment::Experiment e;
  e.backend = "host";
  {
    ks::pipeline::HostChanges first(state, run.out, e, false);
    CHECK_THROWS_WITH(ks::pipeline::HostChanges(state, run.tmp.path / "other", e, false),
                      Catch::Contains("pid " + std::to_string(getpid())) && Catch::Contains(run.out.string()));
  }
  // A run killed with its journal open: the lock goes with it, the registration stays.
  in_killed_process([&] {
    static auto* killed = new ks::pipeline::HostChanges(state, run.out, e, false);
    killed->open_journal();
    made_file(run.file("ksandwich-left"), "x");
  });
  ks::pipeline::HostChanges next(state, run.tmp.path / "next", e, false);  // no stale lock

  auto left = ks::pipeline::leftovers(state);
  REQUIRE(left.size() == 1);
  CHECK(left[0].dir.string() == run.out.string());
  REQUIRE(left[0].pending.size() == 1);
  CHECK_THAT(left[0].pending[0], Catch::Contains("ksandwich-left"));
  auto dead = ks::pipeline::dead_runs(state);
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].string() == run.out.string());

  CHECK(cleanup_run(run.out, rules_for(run.tmp.path), state).ok());
  CHECK_FALSE(fs::exists(run.file("ksandwich-left")));
  CHECK(ks::pipeline::leftovers(state).empty());
  CHECK(ks::pipeline::dead_runs(state).empty());  // unregistered
}

TEST_CASE("cleanup: a journal someone else wrote changes nothing (a knob, a file, a mount)") {
  // The attack of issue 27 (D1): the run directory's owner plants entries whose "value" is
  // what the target holds now, so that cleanup would write "old" bytes into it.
  Run run;
  ks::write_file(run.file("knob"), "current\n");
  ks::write_file(run.file("ksandwich-victim"), "data");
  ks::write_file(run.journal(),
                 R"({"seq":1,"kind":"knob","data":{"path":")" + run.file("knob").string() +
                     R"(","old_hex":")" + ks::hex("pwned") + R"(","value":"current"},"pid":0})" "\n" +
                     R"({"seq":2,"kind":"file","data":{"path":")" + run.file("ksandwich-victim").string() +
                     R"("},"pid":0})" "\n");
  auto report = cleanup_run(run.out, rules_for(run.tmp.path), run.state());
  INFO(ks::join(report.lines, "\n"));
  CHECK(report.ok());
  CHECK(report.undone + report.skipped == 0);
  CHECK(ks::read_file(run.file("knob")) == "current\n");
  CHECK(fs::exists(run.file("ksandwich-victim")));
  CHECK_THAT(ks::join(report.lines, "\n"), Catch::Contains("ignored: 2 line(s)"));
}

TEST_CASE("cleanup: a logs/ or journal that is a symbolic link is refused, the target untouched") {
  Run run;
  auto victim = run.file("victim");
  ks::write_file(victim, "precious\n");
  fs::create_symlink(victim, run.journal());
  CHECK_THROWS(cleanup_run(run.out, rules_for(run.tmp.path), run.state()));
  CHECK(ks::read_file(victim) == "precious\n");
  fs::remove(run.journal());
  fs::remove(run.out / "logs");
  ks::test::TempDir elsewhere("ks-elsewhere");
  ks::write_file(elsewhere.path / "journal.jsonl", "");
  fs::create_directory_symlink(elsewhere.path, run.out / "logs");
  CHECK_THROWS_WITH(cleanup_run(run.out, rules_for(run.tmp.path), run.state()), Catch::Contains("symbolic link"));
  CHECK(ks::read_file(elsewhere.path / "journal.jsonl").empty());
}

TEST_CASE("cleanup: a file is removed only while its name leads to the file the run made (issue 27 D5)") {
  Run run;
  ks::test::TempDir elsewhere("ks-elsewhere");
  ks::write_file(elsewhere.path / "victim", "precious\n");
  in_killed_process([&] {
    journal::Active active(run.journal(), run.key());
    run.registered();
    made_file(run.file("ksandwich-replaced"), "ours");
    made_file(run.file("ksandwich-linked"), "ours");
    journal::record("file", {{"path", run.file("ksandwich-unlearnt").string()}});  // died before its identity
    ks::write_file(run.file("ksandwich-unlearnt"), "whose?");
    made_file(run.file("ksandwich-ours"), "ours");
  });
  // Birth times tick coarsely (a jiffy on ext4): the one window left to a decoy that gets the
  // freed inode number at once is that tick, so the decoy here comes a few ticks later.
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  fs::remove(run.file("ksandwich-replaced"));
  ks::write_file(run.file("ksandwich-replaced"), "theirs");
  fs::remove(run.file("ksandwich-linked"));
  fs::create_symlink(elsewhere.path / "victim", run.file("ksandwich-linked"));

  auto report = cleanup_run(run.out, rules_for(run.tmp.path), run.state());
  INFO(ks::join(report.lines, "\n"));
  CHECK(report.ok());
  CHECK(report.undone == 1);
  CHECK(report.skipped == 3);
  CHECK_FALSE(fs::exists(run.file("ksandwich-ours")));
  CHECK(ks::read_file(run.file("ksandwich-replaced")) == "theirs");
  CHECK(fs::is_symlink(run.file("ksandwich-linked")));
  CHECK(ks::read_file(elsewhere.path / "victim") == "precious\n");
  CHECK(ks::read_file(run.file("ksandwich-unlearnt")) == "whose?");
  CHECK_THAT(ks::join(report.lines, "\n"), Catch::Contains("something else has its name now") &&
                                               Catch::Contains("died before it learnt"));
}

TEST_CASE("cleanup: a file whose identity the run never learnt is removed when only this process can have made it") {
  // A run killed between creating its 0600 file and journaling its identity (or a journal of
  // a version before identities): a regular file of ours, mode 0600, one link, is ours.
  Run run;
  in_killed_process([&] {
    journal::Active active(run.journal(), run.key());
    run.registered();
    journal::record("file", {{"path", run.file("ksandwich-ours-0600").string()}});
    int fd = ::open(run.file("ksandwich-ours-0600").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    REQUIRE(fd >= 0);
    ::close(fd);
  });
  auto report = cleanup_run(run.out, rules_for(run.tmp.path), run.state());
  INFO(ks::join(report.lines, "\n"));
  CHECK(report.undone == 1);
  CHECK_FALSE(fs::exists(run.file("ksandwich-ours-0600")));
}

TEST_CASE("cleanup: a journal is its run's alone, and whoever holds its lock cannot hold cleanup past a Ctrl-C (seventeenth attack)") {
  Run run;
  killed_holding_knob(run);
  struct stat st{};
  REQUIRE(::stat(run.journal().c_str(), &st) == 0);
  CHECK((st.st_mode & 077) == 0);  // no one else can open it, so no one else can lock it
  // One an earlier version left readable, opened and locked by someone before cleanup.
  ::chmod(run.journal().c_str(), 0644);
  const int holder = ::open(run.journal().c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(::flock(holder, LOCK_EX) == 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ks::proc::install_interrupt_handlers();
    try {
      cleanup_run(run.out, rules_for(run.tmp.path), run.state());
      _exit(0);
    } catch (const ks::Interrupted&) {
      _exit(42);
    } catch (...) {
      _exit(1);
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(child, SIGINT);
  int status = 0;
  for (int i = 0; i < 100 && ::waitpid(child, &status, WNOHANG) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (::waitpid(child, &status, WNOHANG) == 0) {  // still waiting after 10 s: what it did before
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
  }
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 42));
  ::close(holder);
  REQUIRE(::stat(run.journal().c_str(), &st) == 0);
  CHECK((st.st_mode & 077) == 0);  // narrowed when cleanup opened it
  CHECK(cleanup_run(run.out, rules_for(run.tmp.path), run.state()).undone == 1);
}

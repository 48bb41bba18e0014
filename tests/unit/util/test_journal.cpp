// The journal of host changes: appended before each change, read back last-first, amends
// merged, torn lines tolerated, bytes kept exactly.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "support/temp_dir.hpp"
#include "util/hash.hpp"
#include "util/files.hpp"
#include "util/journal.hpp"

namespace fs = std::filesystem;
namespace journal = ks::journal;

namespace {
const std::string kKey(32, 'k');  // a journal key; the machine's comes from journal::load_key
}  // namespace

TEST_CASE("journal: pending entries come back last made first, without the undone ones") {
  ks::test::TempDir tmp("ks-journal");
  auto file = tmp.path / "journal.jsonl";
  {
    journal::Journal j(file, kKey);
    auto a = j.change("file", {{"path", "/dev/shm/ksandwich-a"}});
    auto b = j.change("zram", {{"size_mib", 256}});
    j.amend(b, {{"id", "3"}});
    auto c = j.change("mount", {{"target", "/run/ksandwich/mnt-x"}});
    j.undone(c);
    CHECK(a < b);
  }
  auto contents = journal::read(file, kKey);
  REQUIRE(contents.entries.size() == 3);
  CHECK(contents.entries[0].pid == getpid());
  CHECK(journal::maker_alive(contents.entries[0]));
  auto pending = contents.pending();
  REQUIRE(pending.size() == 2);
  CHECK(pending[0].kind == "zram");
  CHECK(pending[0].data["id"] == "3");  // the amend is merged in
  CHECK(pending[0].data["size_mib"] == 256);
  CHECK(pending[1].kind == "file");
}

TEST_CASE("journal: a torn last line is ignored, and the next entry does not run into it") {
  ks::test::TempDir tmp("ks-journal");
  auto file = tmp.path / "journal.jsonl";
  uint64_t first = 0;
  {
    journal::Journal j(file, kKey);
    first = j.change("file", {{"path", "/dev/shm/ksandwich-a"}});
  }
  ks::write_file_append(file, R"({"seq":2,"kind":"mount","data":{"tar)");  // killed mid-write
  auto torn = journal::read(file, kKey);
  CHECK(torn.torn_lines == 1);
  REQUIRE(torn.entries.size() == 1);
  {
    journal::Journal j(file, kKey);  // a resumed run appends to the same journal
    auto next = j.change("loop", {{"backing_file", "/dev/shm/ksandwich-a"}});
    CHECK(next > first);
    j.undone(first);
  }
  auto after = journal::read(file, kKey);
  CHECK(after.torn_lines == 1);
  REQUIRE(after.entries.size() == 2);
  CHECK(after.entries[1].kind == "loop");
  REQUIRE(after.pending().size() == 1);
  CHECK(after.pending()[0].kind == "loop");
}

TEST_CASE("journal: bytes survive hex exactly, and nothing is journaled without an active journal") {
  std::string bytes("128\n\0\xff[none] x\n", 15);
  CHECK(journal::from_hex(ks::hex(bytes)) == bytes);
  CHECK_THROWS(journal::from_hex("abc"));
  CHECK_THROWS(journal::from_hex("zz"));
  CHECK(journal::record("file", {{"path", "/x"}}) == 0);

  ks::test::TempDir tmp("ks-journal");
  {
    journal::Active active(tmp.path / "j.jsonl", kKey);
    auto seq = journal::record("file", {{"path", "/x"}});
    CHECK(seq > 0);
    journal::record_undone(seq);
  }
  CHECK(journal::record("file", {{"path", "/x"}}) == 0);
  auto c = journal::read(tmp.path / "j.jsonl", kKey);
  CHECK(c.entries.size() == 1);
  CHECK(c.pending().empty());
}

TEST_CASE("journal: a process's start time tells a live maker from a reused pid") {
  auto start = journal::process_start(getpid());
  REQUIRE(start);
  journal::Entry e;
  e.pid = getpid();
  e.pid_start = *start + 1;  // same pid, another process
  CHECK_FALSE(journal::maker_alive(e));
  e.pid_start = *start;
  CHECK(journal::maker_alive(e));
}

TEST_CASE("journal: a dead process not yet reaped (a zombie) is not alive") {
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) _exit(0);
  // Not waited for yet: a zombie, whose /proc entry still exists.
  std::optional<uint64_t> start = journal::process_start(child);
  for (int i = 0; i < 200 && start; ++i) {
    usleep(10000);
    start = journal::process_start(child);
  }
  CHECK_FALSE(start);
  CHECK(fs::exists("/proc/" + std::to_string(child)));
  waitpid(child, nullptr, 0);
}

TEST_CASE("journal: a line without this machine's seal is ignored, whatever it says") {
  ks::test::TempDir tmp("ks-journal");
  auto file = tmp.path / "journal.jsonl";
  {
    journal::Journal j(file, kKey);
    j.change("file", {{"path", "/dev/shm/ksandwich-a"}});
  }
  // Planted by whoever owns the output directory: no seal, a forged seal, a sealed line edited.
  ks::write_file_append(file, R"({"seq":7,"kind":"knob","data":{"path":"/proc/sys/kernel/core_pattern",)"
                              R"("old_hex":"7c2f746d702f78","value":"core"},"pid":0})" "\n");
  ks::write_file_append(file, R"({"seq":8,"kind":"file","data":{"path":"/etc/passwd"},"pid":0,"mac":"00"})" "\n");
  auto text = ks::read_file(file);
  auto first = text.substr(0, text.find('\n'));
  auto edited = first;
  edited.replace(edited.find("ksandwich-a"), 11, "ksandwich-b");
  ks::write_file_append(file, edited + "\n");
  auto c = journal::read(file, kKey);
  CHECK(c.unsealed_lines == 3);
  REQUIRE(c.entries.size() == 1);
  CHECK(c.entries[0].data["path"] == "/dev/shm/ksandwich-a");
  // Under another machine's key nothing is trusted.
  CHECK(journal::read(file, std::string(32, 'x')).entries.empty());
}

TEST_CASE("journal: a sealed line moved from another run's journal is ignored, a link to the same journal reads it") {
  ks::test::TempDir tmp("ks-journal");
  fs::create_directories(tmp.path / "a/logs");
  fs::create_directories(tmp.path / "b/logs");
  auto a = tmp.path / "a/logs/journal.jsonl", b = tmp.path / "b/logs/journal.jsonl";
  {
    journal::Journal ja(a, kKey);
    ja.change("file", {{"path", "/dev/shm/ksandwich-a"}});
    ja.change("knob", {{"path", "/proc/sys/vm/drop_caches"}, {"old_hex", "30"}, {"value", "3"}});
    journal::Journal jb(b, kKey);
    jb.change("file", {{"path", "/dev/shm/ksandwich-b"}});
  }
  // B's owner appends A's sealed knob line (seq 2, which B has not used) to B's journal.
  auto lines = ks::split(ks::read_file(a), '\n');
  REQUIRE(lines.size() >= 2);
  REQUIRE(lines[1].find("drop_caches") != std::string::npos);
  ks::write_file_append(b, lines[1] + "\n");
  auto c = journal::read(b, kKey);
  CHECK(c.unsealed_lines == 1);
  REQUIRE(c.entries.size() == 1);
  CHECK(c.entries[0].kind == "file");
  // The same journal named through a link to its directory is the same place.
  fs::create_directory_symlink(tmp.path / "a", tmp.path / "a-link");
  CHECK(journal::read(tmp.path / "a-link/logs/journal.jsonl", kKey).entries.size() == 2);
}

TEST_CASE("journal: never read or appended through a symbolic link, and bounded") {
  ks::test::TempDir tmp("ks-journal");
  auto victim = tmp.path / "victim";
  ks::write_file(victim, "precious\n");
  fs::create_symlink(victim, tmp.path / "journal.jsonl");
  CHECK_THROWS_WITH(journal::read(tmp.path / "journal.jsonl", kKey), Catch::Contains("symbolic link"));
  CHECK_THROWS(journal::Journal(tmp.path / "journal.jsonl", kKey));
  CHECK(ks::read_file(victim) == "precious\n");
  auto big = tmp.path / "big.jsonl";
  ks::write_file(big, std::string(journal::kMaxBytes + 1, '\n'));
  CHECK_THROWS_WITH(journal::read(big, kKey), Catch::Contains("more than 16777216 bytes"));
}

TEST_CASE("journal: the machine's key is made once, private, and refused when it is not") {
  ks::test::TempDir tmp("ks-journal");
  auto state = tmp.path / "state";
  fs::create_directory(state);
  fs::permissions(state, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                             fs::perms::others_read | fs::perms::others_exec);
  auto key = journal::load_key(state);
  CHECK(key.size() == 32);
  CHECK(journal::load_key(state) == key);  // the same key on every call
  CHECK((fs::status(state / "journal.key").permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
  // A state directory others may write to, or a key that is a link: someone could swap it.
  fs::permissions(state, fs::perms::others_write, fs::perm_options::add);
  CHECK_THROWS_WITH(journal::load_key(state), Catch::Contains("writable by others"));
  fs::permissions(state, fs::perms::others_write, fs::perm_options::remove);
  fs::remove(state / "journal.key");
  ks::write_file(tmp.path / "planted", std::string(32, 'p'));
  fs::create_symlink(tmp.path / "planted", state / "journal.key");
  CHECK_THROWS(journal::load_key(state));
}

TEST_CASE("journal: the fuzzer's seeds are sealed for the fuzzer's journal, so they reach past the seal") {
  // tests/fuzz/fuzz_journal.cpp parses them as at this place, with this key.
  auto c = journal::parse(ks::read_file(fs::path(KS_SOURCE_DIR) / "tests/fuzz/seeds/journal/sealed.jsonl"), kKey,
                          "/tmp/ks-fuzz-journal/journal.jsonl");
  CHECK(c.unsealed_lines == 0);
  CHECK(c.torn_lines == 0);
  CHECK(c.entries.size() >= 2);
}

#pragma once
// The journal of everything a run changes on this machine: mounts, loop/zram/brd devices,
// files in /dev/shm, sysfs/procfs knobs, the cpufreq governor, tracefs settings. A change is
// appended and fsynced BEFORE it is made, and an "undone" line after it was put back, so a
// run killed at any moment (SIGKILL included) leaves a file that says what to put back:
// `ksandwich cleanup DIR` (pipeline/host_changes) replays it, last change first.
//
// One JSON object a line (DIR/logs/journal.jsonl):
//   {"seq":3,"kind":"mount","data":{...},"pid":123,"pid_start":456,"at":"..."}  about to change
//   {"amend":3,"data":{"id":"1"}}          learnt once the change was made (zram's number)
//   {"undone":3,"how":"undone"}            put back, or "skipped: why" (nothing to put back)
// A torn last line (the process died while writing it) is ignored when read.
//
// Every line is sealed: "mac" holds HMAC-SHA256 of the journal's real path and the line
// without it, under a key only root can read (load_key: STATE/journal.key, made on first use),
// so a line moved from another run's journal does not verify either. A journal lives in the
// output directory, which its owner can edit; cleanup and --resume act on sealed lines only,
// so a line someone else wrote (a knob, a mount, a file to delete) is never undone. The key
// lives on /run and dies with a reboot, as do all the changes a journal records.
//
// The modules that change the machine call record()/record_undone(); they journal only
// while a run has a journal open (journal::Active), so doctor, tests and benchmarks that
// use the same code write nothing.
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ks::journal {

namespace fs = std::filesystem;

struct Entry {
  uint64_t seq = 0;
  std::string kind;
  nlohmann::json data = nlohmann::json::object();  // with every amend merged in
  int pid = 0;                                     // the process that made the change
  uint64_t pid_start = 0;                          // its start time (/proc/PID/stat), against pid reuse
};

struct Contents {
  std::vector<Entry> entries;  // in the order they were made
  std::set<uint64_t> undone;
  size_t torn_lines = 0;       // lines that are not whole JSON (a write cut short)
  size_t unsealed_lines = 0;   // whole lines whose seal is missing or wrong: ignored
  size_t repeated_lines = 0;   // sealed change lines whose seq came before: ignored
  // Entries not undone, last made first: the order to undo them in.
  std::vector<Entry> pending() const;
};

// The machine's journal key, in DIR (made on first use: 32 random bytes, mode 0600). Throws
// SystemError when DIR or the key is not this user's alone (a symlink, another owner, group or
// other may write), since whoever can read or replace the key can forge a journal.
std::string load_key(const fs::path& dir);

// Reads FILE (never through a symlink; at most kMaxBytes), keeping the lines sealed with KEY;
// a missing file is an empty journal. Throws SystemError when it cannot be read.
constexpr size_t kMaxBytes = 16 << 20;
Contents read(const fs::path& file, std::string_view key);
// What read does with the text of a journal at PLACE (a canonical path: what its seals cover).
Contents parse(std::string_view text, std::string_view key, const std::string& place);

// Hex -> bytes (util/hash.hpp's hex the other way), so a knob's old value is kept byte for
// byte whatever it holds.
std::string from_hex(std::string_view hex);  // throws std::invalid_argument

// This process's start time in clock ticks since boot (/proc/PID/stat field 22);
// nullopt when PID does not exist or has died (a zombie not yet reaped by its parent).
std::optional<uint64_t> process_start(int pid);
// Whether the process that made ENTRY still runs (same pid, same start time).
bool maker_alive(const Entry& entry);

class Journal {
 public:
  // Opens FILE for appending (creating it, never through a symlink), numbering on after what
  // it already holds; every line it writes is sealed with KEY.
  Journal(fs::path file, std::string key);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Appends and fsyncs before returning; throws SystemError when it cannot (then the
  // change must not be made).
  uint64_t change(const std::string& kind, nlohmann::json data);
  void amend(uint64_t seq, nlohmann::json data);
  void undone(uint64_t seq, const std::string& how = "undone");
  const fs::path& file() const { return file_; }

 private:
  void append(const nlohmann::json& line);
  fs::path file_;
  std::string key_;
  std::string place_;  // what every seal covers besides the line: the journal's real path
  int fd_ = -1;
  uint64_t next_ = 1;
  std::mutex mutex_;
};

// Installs a journal as this process's run journal for its lifetime.
class Active {
 public:
  Active(const fs::path& file, std::string key);
  ~Active();
  Active(const Active&) = delete;
  Active& operator=(const Active&) = delete;
  Journal& journal() { return journal_; }

 private:
  Journal journal_;
};

// What PATH names now (not following a link): its device, inode, kind and, where the
// filesystem keeps one, birth time, {"dev": "0:27", "ino": 317, "type": "file", "born": "..."};
// null when nothing has that name. Made things are journaled with it (amend, once made) and undone only
// while their name still leads to that very object: a file, a loop device's backing file, a
// mount (the device of its root). A name alone could lead anywhere by then.
nlohmann::json identity_of(const fs::path& path);

// Into the active journal; record() returns 0 (and the others do nothing) without one.
uint64_t record(const std::string& kind, nlohmann::json data);
void amend(uint64_t seq, nlohmann::json data);
void record_undone(uint64_t seq);

}  // namespace ks::journal

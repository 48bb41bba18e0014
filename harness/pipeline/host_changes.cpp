#include "pipeline/host_changes.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "proc/runner.hpp"
#include "storage/facts.hpp"
#include "storage/storage.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/ownership.hpp"

namespace ks::pipeline {
namespace {

using nlohmann::json;
using journal::Entry;

constexpr long kTracefsMagic = 0x74726163;  // linux/magic.h TRACEFS_MAGIC

// What undoing one entry did: "" when it was undone, else why it was skipped. Throws when
// it cannot be undone.
using Undo = std::function<std::string(const Entry&, const UndoRules&)>;

std::string field(const Entry& e, const char* key) {
  auto it = e.data.find(key);
  return it != e.data.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool at_or_below(const fs::path& path, const fs::path& root) {
  auto p = path.lexically_normal().string(), r = root.lexically_normal().string();
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  return p == r || (p.size() > r.size() && p.compare(0, r.size(), r) == 0 && p[r.size()] == '/');
}

// Throws unless PATH lies at or below one of ROOTS: the journal names it, and a journal is
// a file someone could have changed.
void confine(const std::string& what, const fs::path& path, const std::vector<fs::path>& roots) {
  for (auto& root : roots)
    if (path.is_absolute() && at_or_below(path, root)) return;
  throw SystemError("undo " + what + " " + path.string(), "not a place where ksandwich makes anything");
}

std::vector<storage::MountEntry> mounts() {
  return storage::parse_mountinfo(try_read_file("/proc/self/mountinfo").value_or(""));
}

const char* kUnidentified = "the run died before it learnt what it made, so it cannot be told from another: left alone";

// Why the thing an entry names is not what the run made ("" when it is): its identity, taken
// once it was made, against what the name leads to now. UNIDENTIFIED: what to say when the
// entry has none (a run killed in the moment between making and identifying, or a journal
// of a version before identities); nullptr: judge by the name alone, as a place only root
// can make things in allows.
std::string not_the_one_made(const json& made, const fs::path& path, const char* unidentified = kUnidentified) {
  if (!made.is_object()) return unidentified ? unidentified : "";
  if (journal::identity_of(path) != made) return "something else has its name now (another object, or a link): left alone";
  return "";
}

// Whether PATH is a file only this (root) process can have made: a regular file of ours with
// mode 0600 and one link. In a sticky directory (/dev/shm) no one else can put such a file
// under a name, so an entry without an identity may still remove it.
bool made_by_us(const fs::path& path) {
  struct stat st{};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
         (st.st_mode & 07777) == 0600 && st.st_nlink == 1;
}

std::string undo_mount(const Entry& e, const UndoRules& rules) {
  fs::path target = field(e, "target");
  confine("mount", target, rules.mount_roots);
  const storage::MountEntry* top = nullptr;
  auto all = mounts();
  for (auto& m : all)
    if (m.mount_point == target.string()) top = &m;
  if (!top) return "not mounted";
  auto source = field(e, "source");
  if (top->fstype != field(e, "fstype") || (!source.empty() && top->source != source))
    return "something else is mounted there now (" + top->fstype + " from " + top->source + "): left alone";
  // Without an identity, a mount under the state directory (where only root mounts) is
  // judged by its place, kind and source, as before identities were journaled.
  const bool root_only_place = at_or_below(target, pipeline::kStateDir);
  if (auto why = not_the_one_made(e.data.value("mounted", json()), target, root_only_place ? nullptr : kUnidentified);
      !why.empty())
    return why;
  storage::unmount(target, /*lazily_if_busy=*/false);
  return "";
}

std::string undo_dir(const Entry& e, const UndoRules& rules) {
  fs::path dir = field(e, "path");
  confine("directory", dir, rules.mount_roots);
  if (!fs::is_directory(dir)) return "not there";
  if (::rmdir(dir.c_str()) != 0) {
    if (errno == ENOTEMPTY || errno == EEXIST) return "not empty: left as it is";
    if (errno == EBUSY) return "something is mounted on it: left as it is";
    throw SystemError("remove " + dir.string(), errno);
  }
  return "";
}

fs::path own_file(const Entry& e, const char* key, const UndoRules& rules) {
  fs::path path = field(e, key);
  confine("file", path, rules.file_roots);
  if (!starts_with(path.filename().string(), "ksandwich-"))
    throw SystemError("undo file " + path.string(), "ksandwich names its files ksandwich-*");
  return path;
}

std::string undo_file(const Entry& e, const UndoRules& rules) {
  auto path = own_file(e, "path", rules);
  if (!fs::exists(fs::symlink_status(path))) return "not there";
  json made;
  for (const char* key : {"dev", "ino", "type", "born"})
    if (e.data.contains(key)) made[key] = e.data[key];
  if (auto why = not_the_one_made(made, path, made_by_us(path) ? nullptr : kUnidentified); !why.empty()) return why;
  fs::remove(path);
  return "";
}

std::string undo_loop(const Entry& e, const UndoRules& rules) {
  auto file = own_file(e, "backing_file", rules);
  auto backing = e.data.value("backing", json());
  if (!backing.is_object()) {
    if (!made_by_us(file)) return kUnidentified;
    backing = journal::identity_of(file);  // the file only we can have made: its loops are ours
  }
  // By the backing file's device and inode, not its name: the name may lead elsewhere now.
  auto detached = storage::detach_loops_backed_by_inode(backing.value("dev", ""), backing.value("ino", uint64_t{0}));
  return detached == 0 ? "no loop device is backed by the file it made" : "";
}

std::string undo_zram(const Entry& e, const UndoRules&) {
  auto id = field(e, "id");
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos)
    return "the run died before it learnt the device's number";
  fs::path sys = "/sys/block/zram" + id;
  if (!fs::exists(sys)) return "zram" + id + " is gone";
  // Ours, or an empty one made in the moment before the size was set; not someone else's.
  auto disksize = std::stoull(read_first_line(sys / "disksize", "0"));
  auto wanted = e.data.value("size_mib", uint64_t{0}) << 20;
  if (disksize != 0 && disksize != wanted)
    return "zram" + id + " is not the one this run made (" + std::to_string(disksize >> 20) + " MiB): left alone";
  for (auto& m : mounts())
    if (m.source == "/dev/zram" + id) return "zram" + id + " is mounted on " + m.mount_point + ": left alone";
  storage::remove_zram(id);
  return "";
}

std::string undo_brd(const Entry&, const UndoRules&) {
  if (!fs::exists("/sys/module/brd")) return "brd is not loaded";
  for (auto& m : mounts())
    if (starts_with(m.source, "/dev/ram")) return m.source + " is mounted on " + m.mount_point + ": left alone";
  storage::unload_brd();
  return "";
}

// Puts a knob's old bytes back, but only while it still holds what the run wrote.
std::string undo_knob(const Entry& e, const UndoRules& rules) {
  if (!fs::exists(field(e, "path"))) return "not there";
  auto path = boot::resolve_knob(field(e, "path"), rules.knobs);
  auto old = journal::from_hex(field(e, "old_hex"));
  auto now = read_file(path);
  if (now == old) return "already holds its old value";
  auto value = trim(field(e, "value"));
  if (trim(now) != value && now.find("[" + value + "]") == std::string::npos)
    return "changed since by someone else (now " + trim(now) + "): left as it is";
  write_file(path, old);
  return "";
}

std::string undo_tracefs(const Entry& e, const UndoRules& rules) {
  if (!fs::exists(field(e, "file"))) return "tracefs is not mounted there";
  auto path = boot::resolve_knob(field(e, "file"), {rules.knobs.roots, false});
  struct statfs st{};
  if (rules.require_tracefs && (statfs(path.c_str(), &st) != 0 || st.f_type != kTracefsMagic))
    throw SystemError("undo tracefs " + path.string(), "not on tracefs");
  write_file(path, field(e, "restore"));
  return "";
}

const std::map<std::string, Undo>& undo_table() {
  static const std::map<std::string, Undo> table{
      {"mount", undo_mount}, {"dir", undo_dir},   {"file", undo_file},     {"loop", undo_loop},
      {"zram", undo_zram},   {"brd", undo_brd},   {"knob", undo_knob},     {"tracefs", undo_tracefs}};
  return table;
}

// Another cleanup or resume of the run holds it for seconds; anyone else (who opened a journal
// an earlier version left readable) is not waited for without end.
void lock_or_throw(int fd, const fs::path& path) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) throw SystemError("lock " + path.string(), errno);
    if (std::chrono::steady_clock::now() > deadline)
      throw UserError("another process has held " + path.string() + " locked for 2 minutes",
                      "a cleanup or resume of this run holds it while it undoes changes; find the holder with "
                      "`fuser -v " + shell_quote(path.string()) + "`");
    proc::throw_if_interrupted();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

json read_registration(const fs::path& file) {
  json j = json::parse(try_read_file(file).value_or(""), nullptr, false);
  return j.is_object() ? j : json();
}

bool registration_alive(const json& r) {
  journal::Entry who;
  who.pid = r.value("pid", 0);
  who.pid_start = r.value("pid_start", uint64_t{0});
  return journal::maker_alive(who);
}

// Whether registration R is of a run in OUT_DIR, however either names it (a trailing
// slash, a link on the way).
bool of_dir(const json& r, const fs::path& out_dir) {
  std::error_code ec;
  auto dir = r.is_object() ? r.value("dir", "") : "";
  return !dir.empty() && (dir == out_dir.string() || fs::equivalent(dir, out_dir, ec));
}

// Removes the registrations of OUT_DIR whose process is gone; returns how many.
int unregister_dead(const fs::path& state_dir, const fs::path& out_dir) {
  int removed = 0;
  std::error_code ec;
  for (auto& f : fs::directory_iterator(state_dir / "active", ec)) {
    auto r = read_registration(f.path());
    if (of_dir(r, out_dir) && !registration_alive(r)) removed += fs::remove(f.path(), ec) ? 1 : 0;
  }
  return removed;
}

// The runs in OUT_DIR registered in STATE_DIR, as (pid, start time): each opened its
// journal since this machine booted and has neither ended with nothing left to undo nor
// been cleaned up.
std::set<std::pair<int, uint64_t>> registered_runs(const fs::path& state_dir, const fs::path& out_dir) {
  std::set<std::pair<int, uint64_t>> out;
  std::error_code ec;
  for (auto& f : fs::directory_iterator(state_dir / "active", ec)) {
    auto r = read_registration(f.path());
    if (of_dir(r, out_dir)) out.insert({r.value("pid", 0), r.value("pid_start", uint64_t{0})});
  }
  return out;
}

}  // namespace

fs::path journal_file(const fs::path& out_dir) { return out_dir / "logs/journal.jsonl"; }

void require_own_run_dir(const fs::path& out_dir) {
  // The way to it first: with another user's directory or link on it, the name could lead to
  // another of root's runs by the time it is used (a cleanup or resume acting there).
  if (auto why = untrusted_on_the_way(out_dir, PathRole::kOwnDirectory))
    throw UserError(*why, "choose a run directory on a path only you (or root) may change");
  // What a run reads back or writes into again (a resume, a cleanup): its directories, each
  // point's, and the files it re-reads. What does not exist yet the run makes itself.
  std::vector<std::pair<fs::path, mode_t>> own{{out_dir, S_IFDIR},
                                               {out_dir / "logs", S_IFDIR},
                                               {out_dir / "points", S_IFDIR},
                                               {out_dir / "bundle.json", S_IFREG},
                                               {out_dir / "bundle.json.gz", S_IFREG},
                                               {out_dir / "run-id", S_IFREG}};
  std::error_code ec;
  struct stat points{};
  if (::lstat((out_dir / "points").c_str(), &points) == 0 && S_ISDIR(points.st_mode))
    for (auto& p : fs::directory_iterator(out_dir / "points", ec)) own.emplace_back(p.path(), S_IFDIR);
  for (auto& [path, kind] : own) {
    struct stat st{};
    if (::lstat(path.c_str(), &st) != 0) continue;
    if ((st.st_mode & S_IFMT) != kind)
      throw UserError(path.string() + " is not a " + (kind == S_IFDIR ? "directory" : "regular file") +
                          " (a symbolic link or another kind of file)",
                      "name a run's output directory as its run left it; `run` makes it, its logs/ and points/");
    if (st.st_uid != ::geteuid() || others_may_write(path, st))
      throw UserError(path.string() + " " + owner_text(path, st),
                      "choose a new --out DIR (the run makes it), or one you own that only you may write to");
  }
}

std::string describe(const Entry& e) {
  if (e.kind == "mount")
    return "mount " + field(e, "target") + " (" + field(e, "fstype") + " from " + field(e, "source") + ")";
  if (e.kind == "dir") return "directory " + field(e, "path");
  if (e.kind == "file") return "file " + field(e, "path");
  if (e.kind == "loop") return "loop device on " + field(e, "backing_file");
  if (e.kind == "zram") return "zram" + field(e, "id") + " (" + e.data.value("size_mib", json()).dump() + " MiB)";
  if (e.kind == "brd") return "brd module";
  if (e.kind == "knob") return "knob " + field(e, "path") + " = " + field(e, "value");
  if (e.kind == "tracefs") return "tracefs " + field(e, "file");
  return e.kind + " " + e.data.dump();
}

std::string machine_key(const fs::path& state_dir) {
  std::error_code ec;
  fs::create_directories(state_dir, ec);
  return journal::load_key(state_dir);
}

CleanupReport cleanup_run(const fs::path& out_dir, const UndoRules& rules, const fs::path& state_dir) {
  require_own_run_dir(out_dir);
  auto file = journal_file(out_dir);
  if (!fs::exists(file) && unregister_dead(state_dir, out_dir) > 0)
    return {0, 0, {"its journal is gone (was " + out_dir.string() + " removed?): nothing known to undo"}, ""};
  if (!fs::exists(file))
    throw UserError(out_dir.string() + " has no journal (" + file.string() + ")",
                    "name the output directory of a ksandwich run (one written by this version)");
  // One cleanup of a journal at a time (`cleanup` and `run --resume` could meet).
  int fd = open_private_file(file, O_RDONLY);
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } close_fd{fd};
  lock_or_throw(fd, file);

  const auto key = machine_key(state_dir);
  const auto contents = journal::read(file, key);
  auto pending = contents.pending();
  for (auto& e : pending)
    if (journal::maker_alive(e) && e.pid != getpid())
      throw UserError("the run in " + out_dir.string() + " is still running (pid " + std::to_string(e.pid) + ")",
                      "wait for it to finish, or stop it (kill " + std::to_string(e.pid) +
                          ": it undoes its changes itself); cleanup is for runs that were killed");

  // The registry, not the journal, says which runs have anything left: a finished run's
  // journal with its "undone" lines cut off would otherwise have its changes undone again.
  auto runs = registered_runs(state_dir, out_dir);
  auto unregistered = std::erase_if(pending, [&](const journal::Entry& e) { return !runs.count({e.pid, e.pid_start}); });
  CleanupReport report;
  if (contents.unsealed_lines > 0)
    report.lines.push_back(fmt::format(
        "ignored: {} line(s) of {} not sealed by ksandwich on this machine since it booted (written by "
        "someone else, or before a reboot, which undid what they record): nothing of theirs is touched",
        contents.unsealed_lines, file.string()));
  if (unregistered > 0)
    report.lines.push_back(fmt::format(
        "ignored: {} change(s) {} lists as not undone, made by no run registered in {} (one that finished, or "
        "was cleaned up): nothing of theirs is touched",
        unregistered, file.string(), (state_dir / "active").string()));
  journal::Journal journal(file, key);
  for (auto& e : pending) {
    auto what = describe(e);
    auto undo = undo_table().find(e.kind);
    try {
      if (undo == undo_table().end())
        throw SystemError("undo " + what, "this ksandwich does not know how to undo a '" + e.kind + "'");
      auto skipped = undo->second(e, rules);
      journal.undone(e.seq, skipped.empty() ? "undone by cleanup" : "skipped: " + skipped);
      (skipped.empty() ? report.undone : report.skipped)++;
      report.lines.push_back(skipped.empty() ? "undone: " + what : "skipped: " + what + ": " + skipped);
    } catch (const Interrupted&) {
      throw;
    } catch (const std::exception& err) {
      report.failure = what + ": " + err.what();
      report.lines.push_back("FAILED: " + report.failure);
      break;
    }
  }
  if (report.ok()) unregister_dead(state_dir, out_dir);
  return report;
}

std::vector<fs::path> dead_runs(const fs::path& state_dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (auto& f : fs::directory_iterator(state_dir / "active", ec)) {
    auto r = read_registration(f.path());
    if (r.is_object() && r.contains("dir") && !registration_alive(r)) out.push_back(r["dir"].get<std::string>());
  }
  return out;
}

std::vector<Leftover> leftovers(const fs::path& state_dir) {
  std::vector<Leftover> out;
  for (auto& dir : dead_runs(state_dir)) {
    Leftover l{dir, 0, {}};
    try {
      require_own_run_dir(dir);
      for (auto& e : journal::read(journal_file(dir), machine_key(state_dir)).pending()) {
        l.pid = e.pid;
        l.pending.push_back(describe(e));
      }
    } catch (const std::exception& e) {
      l.pending.push_back(std::string("the journal cannot be read: ") + e.what());
    }
    if (!l.pending.empty()) out.push_back(l);
  }
  return out;
}

HostChanges::HostChanges(const fs::path& state_dir, const fs::path& out_dir, const experiment::Experiment& e,
                         bool resume, bool shared)
    : state_dir_(state_dir), out_dir_(out_dir) {
  std::error_code ec;
  fs::create_directories(state_dir_ / "active", ec);
  auto lock_file = state_dir_ / "run.lock";
  try {
    run_lock_fd_ = open_private_file(lock_file, O_RDWR);  // root's alone: no one else can hold it
  } catch (const SystemError& err) {
    throw UserError("cannot open the machine lock " + lock_file.string() + ": " + err.what(),
                    "a measuring run changes the machine: run it as root");
  }
  if (::flock(run_lock_fd_, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
    int err = errno;
    // Refused a lock of its own: held by a run alone, or shared by instruction-clock runs.
    bool held_shared = !shared && ::flock(run_lock_fd_, LOCK_SH | LOCK_NB) == 0;
    auto holder = json::parse(try_read_file(lock_file).value_or(""), nullptr, false);
    ::close(run_lock_fd_);
    run_lock_fd_ = -1;
    if (err != EWOULDBLOCK) throw SystemError("lock " + lock_file.string(), err);
    std::string who = held_shared ? "runs on QEMU's instruction clock, which share it only with each other"
                      : holder.is_object() ? "pid " + std::to_string(holder.value("pid", 0)) + ", writing " +
                                                 holder.value("out_dir", "?") + ", since " + holder.value("started_at", "?")
                                           : "a process that has not said who it is yet";
    throw UserError("another ksandwich run holds this machine (" + who + ")",
                    "one measuring run per machine, so that runs do not measure each other's noise (runs "
                    "on QEMU's instruction clock excepted: other work does not change their counts, so they "
                    "share the machine with each other): wait for it to finish, or stop it");
  }
  if (!shared) {  // alone, it says who holds the machine; runs that share it leave the file as it is
    json me{{"pid", getpid()}, {"out_dir", out_dir_.string()}, {"started_at", now_utc_iso8601()}};
    auto text = me.dump() + "\n";
    if (::ftruncate(run_lock_fd_, 0) != 0 || ::pwrite(run_lock_fd_, text.data(), text.size(), 0) < 0)
      throw SystemError("write " + lock_file.string(), errno);
  }

  if (e.storage.kind == "device" && !e.storage.device.empty() &&
      fs::exists(e.storage.device, ec)) {
    locked_device_ = fs::canonical(e.storage.device, ec);
    device_lock_fd_ = ::open(locked_device_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (device_lock_fd_ < 0) throw SystemError("open " + locked_device_.string() + " to lock it", errno);
    if (::flock(device_lock_fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(device_lock_fd_);
      device_lock_fd_ = -1;
      ::close(run_lock_fd_);
      run_lock_fd_ = -1;
      throw UserError("storage.device " + e.storage.device + " is locked by another process (flock)",
                      "wait until it is done with the device, or name another one");
    }
  }

  if (resume && fs::exists(journal_file(out_dir_))) {
    auto report = cleanup_run(out_dir_, {}, state_dir_);
    for (auto& line : report.lines) std::fprintf(stderr, "cleanup: %s\n", line.c_str());
    if (!report.ok())
      throw UserError("cannot resume: what the interrupted run left could not be undone: " + report.failure,
                      "fix that, then `ksandwich cleanup " + shell_quote(out_dir_.string()) + "` and resume again");
  }
}

void HostChanges::open_journal() {
  require_own_run_dir(out_dir_);
  journal_ = std::make_unique<journal::Active>(journal_file(out_dir_), machine_key(state_dir_));
  registration_ = state_dir_ / "active" / (std::to_string(getpid()) + ".json");
  json me{{"pid", getpid()},
          {"pid_start", journal::process_start(getpid()).value_or(0)},
          {"dir", out_dir_.string()},
          {"started_at", now_utc_iso8601()}};
  write_file_atomic(registration_, me.dump() + "\n");
}

HostChanges::~HostChanges() {
  try {
    journal_.reset();
    if (!registration_.empty()) {
      auto pending = journal::read(journal_file(out_dir_), machine_key(state_dir_)).pending();
      if (pending.empty()) {
        std::error_code ec;
        fs::remove(registration_, ec);
      } else {
        std::fprintf(stderr, "ksandwich: warning: %zu change(s) to this machine were not undone (%s...); "
                             "`ksandwich cleanup %s` undoes them\n",
                     pending.size(), describe(pending.front()).c_str(), shell_quote(out_dir_.string()).c_str());
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ksandwich: warning: %s\n", e.what());
  }
  if (device_lock_fd_ >= 0) {
    ::close(device_lock_fd_);
    // The protocol: whoever held the lock tells udev to look at the device again.
    try {
      write_file("/sys/class/block" / locked_device_.filename() / "uevent", "change");
    } catch (const std::exception&) {
    }
  }
  if (run_lock_fd_ >= 0) ::close(run_lock_fd_);
}

}  // namespace ks::pipeline

#include "trace/function_counter.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "proc/runner.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/journal.hpp"
#include "util/progress.hpp"

namespace ks::trace {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const fs::path kTracefs = "/sys/kernel/tracing";
// In root's own directory, beside the run lock: in /run/lock or /tmp, everyone's, another
// user could hold it for two minutes, or make a FIFO by its name first (fifty-third attack).
const fs::path kLockDir = "/run/ksandwich";
constexpr auto kLockWait = 120s;
// The function tracer fallback's ring buffer: 16 MiB per CPU (~500,000 calls), but at most
// 64 MiB over all CPUs, since `trace` is read as text in one piece.
uint64_t trace_buffer_kib() {
  uint64_t cpus = std::max(1u, std::thread::hardware_concurrency());
  return std::clamp<uint64_t>(65536 / cpus, 1408, 16384);
}

// POSIX reads and writes, so that errors carry the errno tracefs returned (EPERM under
// lockdown, EINVAL for a name it does not know).
std::string read_text(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw SystemError("read " + path.string(), errno);
  std::string out;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      throw SystemError("read " + path.string(), err);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

// Writes each chunk in full, so that an error names the chunk tracefs refused. Short writes
// are the rule, not the exception: set_ftrace_filter takes one name per write(2) and
// returns how much of the buffer that name used.
void write_chunks(const fs::path& path, const std::vector<std::string>& chunks) {
  int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) throw SystemError("open " + path.string() + " for writing", errno);
  for (auto& chunk : chunks) {
    size_t done = 0;
    while (done < chunk.size()) {
      ssize_t n = ::write(fd, chunk.data() + done, chunk.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int err = n < 0 ? errno : EIO;
        ::close(fd);
        throw SystemError("write '" + trim(chunk) + "' to " + path.string(), err);
      }
      done += static_cast<size_t>(n);
    }
  }
  if (::close(fd) != 0) throw SystemError("close " + path.string(), errno);
}

void write_text(const fs::path& path, const std::string& text) { write_chunks(path, {text}); }

// Function names in writes of at most ~4 KiB, never cutting a name.
std::vector<std::string> name_chunks(const std::vector<std::string>& names) {
  std::vector<std::string> chunks;
  for (auto& name : names) {
    if (chunks.empty() || chunks.back().size() + name.size() + 1 > 4000) chunks.emplace_back();
    chunks.back() += name + "\n";
  }
  return chunks;
}

std::optional<fs::path> mounted_tracefs() {
  std::optional<fs::path> found;
  for (auto& line : split(try_read_file("/proc/self/mountinfo").value_or(""), '\n')) {
    auto sep = line.find(" - ");
    if (sep == std::string::npos) continue;
    auto after = split(line.substr(sep + 3), ' ');
    auto before = split(line.substr(0, sep), ' ');
    if (after.empty() || after[0] != "tracefs" || before.size() < 5) continue;
    std::string point = before[4];  // octal escapes (\040) only in odd mount points
    if (point == kTracefs.string()) return fs::path(point);
    if (!found) found = fs::path(point);
  }
  return found;
}

bool has_word(const std::string& text, const std::string& word) {
  for (auto& w : split(text, ' '))
    if (trim(w) == word) return true;
  return false;
}

// Brings tracefs into view for the scope: finds it, or mounts it and unmounts it again.
class Tracefs {
 public:
  Tracefs() {
    if (auto dir = mounted_tracefs()) {
      dir_ = *dir;
      return;
    }
    proc::Command cmd;
    cmd.argv = {"mount", "-t", "tracefs", "nodev", kTracefs.string()};
    cmd.timeout = 30s;
    journaled_ = journal::record("mount", {{"target", kTracefs.string()}, {"source", "nodev"}, {"fstype", "tracefs"}});
    proc::run_checked(cmd);
    journal::amend(journaled_, {{"mounted", journal::identity_of(kTracefs)}});
    dir_ = kTracefs;
    mounted_by_us_ = true;
  }
  ~Tracefs() { release(); }
  Tracefs(const Tracefs&) = delete;
  Tracefs& operator=(const Tracefs&) = delete;

  void release() noexcept {
    if (!mounted_by_us_) return;
    mounted_by_us_ = false;
    try {
      proc::Command cmd;
      cmd.argv = {"umount", dir_.string()};
      cmd.timeout = 30s;
      cmd.cleanup = true;
      auto r = proc::run(cmd);
      if (!r.ok()) progress::say("ksandwich: warning: " + r.describe());
      else journal::record_undone(journaled_);
    } catch (const std::exception& e) {
      progress::say("ksandwich: warning: unmount " + dir_.string() + ": " + e.what());
    }
  }

  fs::path operator/(const std::string& name) const { return dir_ / name; }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
  bool mounted_by_us_ = false;
  uint64_t journaled_ = 0;
};

// One direct-hit pass at a time per machine: two would overwrite each other's tracer.
class MachineLock {
 public:
  MachineLock() {
    if (::geteuid() != 0) return;  // tracefs is root's: no one else gets as far as writing it
    // A guest's initramfs has no /run; a host has it, and the directory is made as the run's is.
    for (const auto& dir : {kLockDir.parent_path(), kLockDir})
      if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) throw SystemError("make " + dir.string(), errno);
    struct stat st{};
    if (::lstat(kLockDir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))
      throw SystemError("lock tracefs", kLockDir.string() + " is not a directory of root's alone");
    fd_ = open_private_file(kLockDir / "tracefs.lock", O_RDWR);
    auto deadline = std::chrono::steady_clock::now() + kLockWait;
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno == ENOSYS || errno == ENOLCK) {  // no CONFIG_FILE_LOCKING (a tiny guest)
        ::close(fd_);
        fd_ = -1;
        return;
      }
      if (errno != EWOULDBLOCK && errno != EINTR) {
        int err = errno;
        ::close(fd_);
        throw SystemError("lock the tracefs lock file", err);
      }
      if (std::chrono::steady_clock::now() > deadline) {
        ::close(fd_);
        throw SystemError("wait for tracefs",
                          "another ksandwich process held the tracefs lock for 2 minutes");
      }
      proc::throw_if_interrupted();
      std::this_thread::sleep_for(100ms);
    }
  }
  ~MachineLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  MachineLock(const MachineLock&) = delete;
  MachineLock& operator=(const MachineLock&) = delete;

 private:
  int fd_ = -1;
};

std::string why_unreadable(const SystemError& e) {
  std::string why = e.what();
  if (e.error_number() == EPERM || e.error_number() == EACCES)
    why += " (kernel lockdown or a security module forbids function tracing on this kernel)";
  return why;
}

}  // namespace

struct FunctionCounter::State {
  std::vector<Target> targets;
  TraceCapture capture;
  std::vector<FunctionCount> result;
  bool stopped = false;

  std::optional<MachineLock> lock;
  std::optional<Tracefs> tracefs;

  // What was found, to put back. Each is set just before the first write to its file.
  std::optional<std::string> saved_tracer, saved_tracing_on, saved_profile_enabled,
      saved_buffer_kib;
  std::optional<std::vector<std::string>> saved_filter;
  bool trace_buffer_used = false;
  // tracefs file -> its journal entry (util/journal), which holds what restore() writes back.
  std::map<std::string, uint64_t> journaled;

  void journal_before_writing(const std::string& file, const std::string& restore_text) {
    if (!journaled.count(file))
      journaled[file] = journal::record("tracefs", {{"file", (*tracefs / file).string()}, {"restore", restore_text}});
  }
  void journal_restored(const std::string& file) {
    if (auto it = journaled.find(file); it != journaled.end()) journal::record_undone(it->second);
  }

  void start(const std::string& wanted) {
    if (wanted != "auto" && wanted != kFunctionProfiler && wanted != kFunctionTracer)
      throw SystemError("count function calls", "unknown method '" + wanted + "'");
    if (targets.empty()) {
      capture.failure = "no functions to count";
      return;
    }
    lock.emplace();
    tracefs.emplace();
    auto& t = *tracefs;

    bool profiler = fs::exists(t / "function_profile_enabled") && fs::exists(t / "trace_stat");
    bool tracer = has_word(try_read_file(t / "available_tracers").value_or(""), "function");
    if (!profiler && !tracer)
      throw SystemError("find a way to count function calls",
                        "this kernel has neither the function profiler (CONFIG_FUNCTION_PROFILER)"
                        " nor the function tracer (CONFIG_FUNCTION_TRACER)");
    if (wanted == kFunctionProfiler && !profiler)
      throw SystemError("use the function profiler", "this kernel has no CONFIG_FUNCTION_PROFILER");
    if (wanted == kFunctionTracer && !tracer)
      throw SystemError("use the function tracer", "this kernel has no CONFIG_FUNCTION_TRACER");
    if (wanted == kFunctionTracer) profiler = false;
    try {
      capture.available_filter_functions = read_text(t / "available_filter_functions");
    } catch (const SystemError& e) {
      throw SystemError("list traceable functions", why_unreadable(e));
    }
    std::string method = profiler ? kFunctionProfiler : kFunctionTracer;

    auto available = parse_function_list(capture.available_filter_functions);
    std::vector<std::string> symbols;
    for (auto& target : targets)
      for (auto& s : symbols_for(target.function, available))
        if (std::find(symbols.begin(), symbols.end(), s) == symbols.end()) symbols.push_back(s);
    if (symbols.empty()) {  // nothing traceable: report that, touch nothing
      capture.method = method;
      return;
    }

    saved_filter = [&] {
      auto names = parse_function_list(read_text(t / "set_ftrace_filter"));
      std::vector<std::string> list;
      for (auto& [name, count] : names) list.push_back(name);
      return list;
    }();
    journal_before_writing("set_ftrace_filter", join(name_chunks(*saved_filter), ""));
    write_chunks(t / "set_ftrace_filter", name_chunks(symbols));
    capture.set_ftrace_filter = read_text(t / "set_ftrace_filter");
    auto filtered = parse_function_list(capture.set_ftrace_filter);
    if (std::none_of(symbols.begin(), symbols.end(), [&](auto& s) { return filtered.count(s); }))
      throw SystemError("set the ftrace filter", "set_ftrace_filter accepted none of the functions");

    if (profiler) {
      saved_profile_enabled = trim(read_text(t / "function_profile_enabled"));
      journal_before_writing("function_profile_enabled", *saved_profile_enabled);
      write_text(t / "function_profile_enabled", "1");  // (re)starting resets the counts
    } else {
      saved_tracing_on = trim(read_text(t / "tracing_on"));
      saved_tracer = trim(read_text(t / "current_tracer"));
      saved_buffer_kib = trim(read_text(t / "buffer_size_kb"));
      journal_before_writing("tracing_on", *saved_tracing_on);
      write_text(t / "tracing_on", "0");
      journal_before_writing("current_tracer", *saved_tracer);
      write_text(t / "current_tracer", "nop");
      if (auto kib = buffer_kib(*saved_buffer_kib); !kib || *kib < trace_buffer_kib()) {
        if (kib) journal_before_writing("buffer_size_kb", std::to_string(*kib));
        write_text(t / "buffer_size_kb", std::to_string(trace_buffer_kib()));
      }
      trace_buffer_used = true;
      write_text(t / "trace", "");  // opening with O_TRUNC clears the buffer
      write_text(t / "current_tracer", "function");
      write_text(t / "tracing_on", "1");
    }
    capture.method = method;
  }

  void collect() {
    auto& t = *tracefs;
    if (capture.method == kFunctionProfiler) {
      // Read while still counting: some kernels free the statistics when profiling stops.
      std::vector<fs::path> files;
      for (auto& e : fs::directory_iterator(t / "trace_stat"))
        if (starts_with(e.path().filename().string(), "function")) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (auto& f : files) capture.profile_stats.push_back(read_text(f));
      write_text(t / "function_profile_enabled", "0");
    } else if (capture.method == kFunctionTracer) {
      write_text(t / "tracing_on", "0");
      capture.trace = read_text(t / "trace");
    }
  }

  // "1408", or "7 (expanded: 1408)" before the first tracer ever ran: 1408 is what the
  // kernel would have grown the buffer to, and it has grown now.
  static std::optional<uint64_t> buffer_kib(const std::string& text) {
    std::string number = text;
    if (auto at = text.find("expanded: "); at != std::string::npos) number = text.substr(at + 10);
    try {
      size_t used = 0;
      uint64_t kib = std::stoull(number, &used);
      if (used == 0) return std::nullopt;
      return kib;
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

  // Puts back every file written, in the reverse order; reports what could not be put back.
  void restore() noexcept {
    if (!tracefs) return;
    auto& t = *tracefs;
    // Each file's last write puts it back: its journal entry is then undone.
    auto attempt = [&](const char* what, bool last, auto&& action) {
      try {
        action();
        if (last) journal_restored(what);
      } catch (const std::exception& e) {
        progress::say(std::string("ksandwich: warning: could not restore tracefs ") + what + ": " + e.what());
      }
    };
    if (saved_profile_enabled)
      attempt("function_profile_enabled", true,
              [&] { write_text(t / "function_profile_enabled", *saved_profile_enabled); });
    if (saved_tracer) {
      attempt("tracing_on", false, [&] { write_text(t / "tracing_on", "0"); });
      attempt("current_tracer", true, [&] { write_text(t / "current_tracer", *saved_tracer); });
    }
    if (trace_buffer_used) attempt("trace", false, [&] { write_text(t / "trace", ""); });
    if (saved_buffer_kib)
      if (auto kib = buffer_kib(*saved_buffer_kib))
        attempt("buffer_size_kb", true, [&] { write_text(t / "buffer_size_kb", std::to_string(*kib)); });
    if (saved_filter)
      attempt("set_ftrace_filter", true,
              [&] { write_chunks(t / "set_ftrace_filter", name_chunks(*saved_filter)); });
    if (saved_tracing_on)
      attempt("tracing_on", true, [&] { write_text(t / "tracing_on", *saved_tracing_on); });
    journaled.clear();
    saved_profile_enabled.reset();
    saved_tracer.reset();
    saved_buffer_kib.reset();
    saved_filter.reset();
    saved_tracing_on.reset();
    trace_buffer_used = false;
    tracefs.reset();  // unmounts if we mounted
    lock.reset();
  }

  void fail(const std::string& why) {
    restore();
    capture.method = kNoTracing;
    capture.failure = why;
    capture.profile_stats.clear();
    capture.trace.clear();
  }
};

FunctionCounter::FunctionCounter(std::vector<Target> targets, const std::string& method)
    : state_(std::make_unique<State>()) {
  state_->targets = std::move(targets);
  try {
    state_->start(method);
  } catch (const Interrupted&) {
    state_->restore();
    throw;
  } catch (const std::exception& e) {
    state_->fail(e.what());
  }
}

FunctionCounter::~FunctionCounter() { state_->restore(); }

std::vector<FunctionCount> FunctionCounter::stop() {
  auto& s = *state_;
  if (s.stopped) return s.result;
  s.stopped = true;
  try {
    if (s.capture.method != kNoTracing && s.tracefs) s.collect();
  } catch (const Interrupted&) {
    s.restore();
    throw;
  } catch (const std::exception& e) {
    s.fail(std::string("reading the counts failed: ") + e.what());
  }
  s.restore();
  s.result = count_calls(s.targets, s.capture);
  return s.result;
}

const std::string& FunctionCounter::method() const { return state_->capture.method; }
const std::string& FunctionCounter::failure() const { return state_->capture.failure; }

TracingSupport probe_tracing() {
  TracingSupport support;
  support.tracefs = kTracefs.string();
  try {
    Tracefs t;
    support.tracefs = t.dir().string();
    bool profiler = fs::exists(t / "function_profile_enabled") && fs::exists(t / "trace_stat");
    bool tracer = has_word(try_read_file(t / "available_tracers").value_or(""), "function");
    if (!profiler && !tracer) {
      support.reason = "this kernel has neither the function profiler (CONFIG_FUNCTION_PROFILER) "
                       "nor the function tracer (CONFIG_FUNCTION_TRACER)";
      return support;
    }
    for (const char* file : {"available_filter_functions", "set_ftrace_filter"}) {
      try {
        read_text(t / file);
      } catch (const SystemError& e) {
        support.reason = why_unreadable(e);
        return support;
      }
    }
    support.method = profiler ? kFunctionProfiler : kFunctionTracer;
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    support.reason = e.what();
  }
  return support;
}

}  // namespace ks::trace

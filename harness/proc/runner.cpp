#include "proc/runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::proc {

Command command(std::vector<std::string> argv, std::chrono::milliseconds timeout) {
  Command c;
  c.argv = std::move(argv);
  c.timeout = timeout;
  return c;
}
namespace {

std::atomic<bool> g_interrupted{false};
std::optional<std::filesystem::path> g_command_log;
std::mutex g_log_mutex;

void on_signal(int) { g_interrupted = true; }

std::string tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

void log_command(const Result& r) {
  std::lock_guard lock(g_log_mutex);
  if (!g_command_log) return;
  nlohmann::json j{{"argv", r.argv},         {"exit_code", r.exit_code},
                   {"signal", r.term_signal}, {"timed_out", r.timed_out},
                   {"seconds", r.seconds},    {"stderr_tail", tail(r.err, 2000)}};
  std::ofstream(*g_command_log, std::ios::app) << j.dump() << '\n';
}

struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() {
    if (pipe2(fd, O_CLOEXEC) != 0) throw SystemError("pipe2", errno);
  }
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) close(f);
  }
  void close_end(int i) {
    if (fd[i] >= 0) close(fd[i]);
    fd[i] = -1;
  }
};

[[noreturn]] void exec_child(const Command& cmd, const std::filesystem::path& program, int out_fd,
                             int err_fd, pid_t parent) {
  setpgid(0, 0);  // own process group: a timeout kills the command and its children
  // Dies with ksandwich, even by SIGKILL: no agent, fio or QEMU is left running on a mount
  // that `cleanup` or `--resume` then cannot remove ("target is busy"). proc::run waits in
  // the thread that forked, so that thread outlives the child.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(125);  // ksandwich died before the line above took effect
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  int devnull = open("/dev/null", O_RDONLY);
  dup2(devnull, STDIN_FILENO);
  dup2(out_fd, STDOUT_FILENO);
  dup2(err_fd, STDERR_FILENO);
  if (cmd.cwd && chdir(cmd.cwd->c_str()) != 0) _exit(126);
  for (auto& prefix : cmd.unset_env_prefixes) {
    std::vector<std::string> names;
    for (char** e = environ; *e; ++e)
      if (std::string_view kv(*e); kv.starts_with(prefix)) names.emplace_back(kv.substr(0, kv.find('=')));
    for (auto& name : names) unsetenv(name.c_str());
  }
  for (auto& [k, v] : cmd.env) setenv(k.c_str(), v.c_str(), 1);
  std::vector<char*> argv;
  for (auto& a : cmd.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(program.c_str(), argv.data());
  dprintf(err_fd, "cannot execute %s: %s\n", argv[0], std::strerror(errno));
  _exit(127);
}

void kill_group(pid_t pid) {
  kill(-pid, SIGTERM);
  for (int i = 0; i < 20; ++i) {  // 2 s grace, then SIGKILL
    if (waitpid(pid, nullptr, WNOHANG) == pid) return;
    usleep(100'000);
  }
  kill(-pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

}  // namespace

std::string Result::describe() const {
  std::string what = "`" + join(argv, " ") + "`";
  if (timed_out) what += " timed out";
  else if (overflowed) what += " printed too much and was stopped";
  else if (term_signal) what += " was killed by signal " + std::to_string(term_signal);
  else what += " exited " + std::to_string(exit_code);
  auto detail = trim(tail(err.empty() ? out : err, 1500));
  if (!detail.empty()) what += ": " + detail;
  return what;
}

Result run(const Command& cmd) {
  if (cmd.argv.empty()) throw SystemError("run", "empty command");
  if (!cmd.cleanup) throw_if_interrupted();
  auto program = find_program(cmd.argv[0]);
  if (!program) throw SystemError("run " + cmd.argv[0], "program not found on PATH");
  Result r;
  r.argv = cmd.argv;
  auto start = std::chrono::steady_clock::now();

  Pipe out, err;
  int log_fd = -1;
  if (cmd.log_file) {
    log_fd = open(cmd.log_file->c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) throw SystemError("open log " + cmd.log_file->string(), errno);
  }
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw SystemError("fork", errno);
  if (pid == 0)
    exec_child(cmd, *program, log_fd >= 0 ? log_fd : out.fd[1], log_fd >= 0 ? log_fd : err.fd[1], parent);
  setpgid(pid, pid);
  if (log_fd >= 0) close(log_fd);
  out.close_end(1);
  err.close_end(1);

  auto deadline = start + cmd.timeout;
  auto next_tick = start;
  auto tick = [&] {
    if (!cmd.on_tick || std::chrono::steady_clock::now() < next_tick) return;
    next_tick = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    cmd.on_tick();
  };
  bool stop = false;
  while (!stop && (out.fd[0] >= 0 || err.fd[0] >= 0)) {
    if (g_interrupted && !cmd.cleanup) {
      kill_group(pid);
      log_command(r);
      throw Interrupted();
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      break;
    }
    pollfd fds[2] = {{out.fd[0], POLLIN, 0}, {err.fd[0], POLLIN, 0}};
    int n = poll(fds, 2, static_cast<int>(std::min<long>(left.count(), 200)));
    if (n < 0 && errno != EINTR) throw SystemError("poll", errno);
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        std::string_view chunk(buf, static_cast<size_t>(got));
        (i == 0 ? r.out : r.err).append(chunk);
        if (i == 0 && cmd.on_stdout) cmd.on_stdout(chunk);
        if (cmd.max_output && r.out.size() + r.err.size() > cmd.max_output) r.overflowed = stop = true;
      } else if (got == 0 || errno != EINTR) {
        (i == 0 ? out : err).close_end(0);
      }
    }
    tick();
  }
  // Output closed (or log-file mode): wait for exit within the same deadline.
  int status = 0;
  while (!r.timed_out && !r.overflowed) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (g_interrupted && !cmd.cleanup) {
      kill_group(pid);
      log_command(r);
      throw Interrupted();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      r.timed_out = true;
      break;
    }
    tick();
    usleep(20'000);
  }
  if (r.timed_out || r.overflowed) {
    kill_group(pid);
  } else if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.term_signal = WTERMSIG(status);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  log_command(r);
  return r;
}

Result run_checked(const Command& cmd) {
  Result r = run(cmd);
  if (!r.ok()) throw SystemError("command failed", r.describe());
  return r;
}

std::optional<std::filesystem::path> find_program(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    if (access(program.c_str(), X_OK) == 0) return std::filesystem::path(program);
    return std::nullopt;
  }
  const char* path = getenv("PATH");
  std::string dirs = path ? path : kSystemProgramPath;
  dirs += ":/usr/sbin:/sbin";  // root tools (mkfs, losetup) even when PATH omits sbin
  for (auto& dir : split(dirs, ':')) {
    // An empty or relative entry ("." or "bin") names whatever directory this runs in, where
    // someone may have left a program (fifty-third attack: python3 and modinfo in /tmp). For
    // root, ksandwich's main keeps only trusted directories in PATH (trusted_program_path).
    if (dir.empty() || dir.front() != '/') continue;
    auto p = std::filesystem::path(dir) / program;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return std::nullopt;
}

bool have_program(const std::string& program) { return find_program(program).has_value(); }

void set_command_log(std::optional<std::filesystem::path> path) {
  std::lock_guard lock(g_log_mutex);
  g_command_log = std::move(path);
}

void install_interrupt_handlers() {
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
}

bool interrupted() { return g_interrupted; }

void throw_if_interrupted() {
  if (g_interrupted) throw Interrupted();
}

}  // namespace ks::proc

#pragma once
// Every external command (mkfs, mount, losetup, make, qemu, fio, the agent) goes through
// run(): it records argv, exit status, duration and output, enforces a timeout, and kills
// the command's whole process group on timeout or on SIGINT/SIGTERM.
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ks::proc {

struct Command {
  std::vector<std::string> argv;
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  std::optional<std::filesystem::path> cwd;
  std::vector<std::pair<std::string, std::string>> env;  // added to the inherited environment
  std::vector<std::string> unset_env_prefixes;  // variables removed from it, by prefix ("GIT_")
  // When set, stdout and stderr go to this file (appended) instead of being captured:
  // for long, chatty commands such as make and qemu.
  std::optional<std::filesystem::path> log_file;
  // Optional: called with each chunk of captured stdout as it arrives (progress display).
  std::function<void(std::string_view)> on_stdout;
  // Optional: called about every 200 ms while the command runs (a progress line that follows
  // a file the command writes, such as QEMU's results port).
  std::function<void()> on_tick;
  // Cleanup commands (umount, losetup -d) run even after SIGINT/SIGTERM arrived.
  bool cleanup = false;
  // Non-zero: the command is stopped, as on a timeout, once its captured stdout and stderr
  // together pass this many bytes (what a patch's make prints is anyone's to make endless).
  size_t max_output = 0;
};

// A command with a timeout and nothing else set: the common case.
Command command(std::vector<std::string> argv, std::chrono::milliseconds timeout = std::chrono::minutes(5));

struct Result {
  std::vector<std::string> argv;
  int exit_code = -1;    // -1 when killed by a signal
  int term_signal = 0;
  bool timed_out = false;
  bool overflowed = false;  // stopped for printing more than Command::max_output
  double seconds = 0;
  std::string out;
  std::string err;

  bool ok() const { return exit_code == 0 && !timed_out && !overflowed; }
  std::string describe() const;  // "`mkfs.btrfs -f /dev/loop0` exited 1: <stderr tail>"
};

// Runs the command; never throws for a non-zero exit (see run_checked).
// Throws SystemError when the command cannot be started, Interrupted on SIGINT/SIGTERM.
Result run(const Command& cmd);

// Like run, but throws SystemError (with stderr tail) unless the command exited 0.
Result run_checked(const Command& cmd);

// True when PROGRAM is found on PATH (or is an executable path). Only PATH's absolute entries
// are looked in (for root, ksandwich has kept only trusted ones: trusted_program_path).
bool have_program(const std::string& program);
std::optional<std::filesystem::path> find_program(const std::string& program);

// A log of every command run through this process, for the run's logs/commands.jsonl.
void set_command_log(std::optional<std::filesystem::path> path);

// SIGINT/SIGTERM set a flag instead of killing us, so cleanups run.
void install_interrupt_handlers();
bool interrupted();
void throw_if_interrupted();

}  // namespace ks::proc

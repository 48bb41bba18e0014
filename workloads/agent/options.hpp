#pragma once
// The agent's command line: the contract the harness relies on. Parsing and validation are
// pure (arguments in, Options or a one-line message out), so unit tests pin them down;
// checks that need the machine (does --dir exist, is fio installed) live in environment.cpp.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks::agent {

enum class WorkloadKind { Clone, Dedupe, DioRandwrite, BufferedWrite, Fio };

std::string_view workload_name(WorkloadKind kind);
std::optional<WorkloadKind> workload_from_name(std::string_view name);
const std::vector<std::string>& workload_names();

struct Options {
  WorkloadKind workload = WorkloadKind::Clone;
  std::string dir;
  int64_t rounds = 15;
  int64_t warmup = 0;
  int64_t cpu = -1;      // -1: do not pin
  std::string out;       // empty: stdout
  std::string profile_switch;  // written 1 / 0 around each round's timed region (counters.hpp)
  bool canary = true;    // time the CPU canary around each round (off: a deterministic clock)
  // clone, dedupe
  int64_t ops = 10000;
  int64_t range_bytes = 4096;
  // dio-randwrite, fio
  int64_t iodepth = 64;
  int64_t jobs = 1;
  int64_t file_size_mib = 256;
  double runtime_s = 5;  // seconds; fractions allowed
  int64_t ios = 0;       // dio-randwrite: writes per round, all jobs together; 0: runtime_s
  // buffered-write
  int64_t size_mib = 256;
  int64_t block_kib = 1024;
  // fio
  std::string job;
  std::string fio = "fio";
};

struct ParseResult {
  enum class Action { Run, PrintAndExit, BadInput };
  Action action = Action::BadInput;
  Options options;
  std::string message;  // help or version text (PrintAndExit), or what was wrong (BadInput)
};

// ARGS excludes the program name. Never prints, never exits.
ParseResult parse_arguments(const std::vector<std::string>& args, const std::string& version);

// The value checks CLI11 cannot express: one line saying what is wrong and what to do.
std::optional<std::string> validate(const Options& options);

}  // namespace ks::agent

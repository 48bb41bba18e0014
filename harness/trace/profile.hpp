#pragma once
// Function profiles, the pure half: which kernel functions the profiling pass watches, and
// how the guest's tracefs texts of one workload's pass become the point's `profile` entry
// (calls and own time of each function, and the ops the pass did). The guest side is
// boot/guest/init.sh (profile_workload); the comparison of the arms is analysis/profile.hpp.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks::trace {

// set_ftrace_filter globs: the paths a btrfs clone, dedupe, direct or buffered write takes
// (btrfs, the VFS entry points, xattr and LSM hooks, iomap, the block layer's submission,
// io_uring's issue path). Letters, digits, '_' and '*' only; one that matches nothing is
// skipped.
const std::vector<std::string>& profile_filter();
// The same, as the guest matches it against available_filter_functions (a glob written to
// set_ftrace_filter costs a kallsyms lookup of every function): words for `grep -F` (fast;
// every match holds one: each glob's longest piece between '*'s) and one extended regular
// expression, an alternation ("btrfs_[^ ]*|...") that guest/init.sh anchors to a whole
// name. EXTRA_FUNCTIONS (the direct-hit functions) join both, with their compiler clones.
std::vector<std::string> profile_words(const std::vector<std::string>& extra_functions = {});
std::string profile_regex(const std::vector<std::string>& extra_functions = {});
// Named functions and their compiler clones (name.isra.0, name.constprop.0.isra.0 ...) as
// such an alternation: the direct-hit functions.
std::string functions_regex(const std::vector<std::string>& functions);

// One function of a profile: calls, and own time (the function minus the profiled functions
// it called, sleeping excluded), in the guest clock's ns; instructions under -icount.
struct ProfiledFunction {
  uint64_t calls = 0;
  std::optional<uint64_t> own_ns;  // absent without CONFIG_FUNCTION_GRAPH_TRACER
};

// trace_stat/function<cpu>: "  name  hits [total us  avg us  s^2 us]" (names cut to 30
// characters); sums the lines of every CPU given.
std::map<std::string, ProfiledFunction> parse_profile(const std::vector<std::string>& per_cpu);

// What the guest sent for one workload's profiling pass.
struct ProfileCapture {
  std::string workload;
  int status = -1;                         // the agent's exit status in the pass
  std::string agent_output;                // its JSON lines (the pass's rounds: how many ops)
  std::vector<std::string> stats;          // trace_stat/function<cpu>, every CPU
};

// At most this many functions per workload and point (the largest by own time, or calls);
// what is left out is counted. The compressed bundle goes to a list that takes 100,000
// bytes a mail: the main job's 6 points, with 113-131 functions a workload each, came to
// 46 KB (438 KB uncompressed, 27 KB of it a point's profiles).
inline constexpr size_t kProfileKeep = 150;

// The point's `profile` entry for one workload: {"workload", "ops", "elapsed_ns" (the pass's
// rounds, profiled), "calls" (of every function, kept or not), "functions": [{"function",
// "calls", "own_ns"}...] (largest first), "left_out": {"functions", "max_own_ns" | "max_calls"}}
// or, when the pass could not count, {"workload", "failure"}.
nlohmann::json profile_entry(const ProfileCapture& capture);

}  // namespace ks::trace

#pragma once
// Direct hits, the pure half: which kernel functions a patch claims to exercise, how tracefs
// texts turn into per-function call counts, and the gate that makes a run INVALID when a
// required function was not traceable or not called. No files, no processes: the host's
// FunctionCounter and the QEMU guest's captured tracefs files go through the same code.
#include <cstdint>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "evidence/bundle.hpp"

namespace ks::trace {

inline constexpr const char* kFunctionProfiler = "function_profiler";
inline constexpr const char* kFunctionTracer = "function_tracer";
inline constexpr const char* kNoTracing = "none";

// A function the experiment lists for an arm.
struct Target {
  std::string function;
  bool required = false;  // required: not traceable or never called -> INVALID
};

// One entry of a point's `direct_hit` array in the bundle.
struct FunctionCount {
  std::string function;
  bool required = false;
  bool available = false;            // listed in available_filter_functions
  bool filtered = false;             // accepted by set_ftrace_filter (read back)
  uint64_t calls = 0;
  std::string method = kNoTracing;   // function_profiler | function_tracer | none
  std::vector<std::string> symbols;  // what was traced: the name and its compiler clones
  std::string note;                  // why it was not counted, or why the count is a bound
};

// Texts as read from tracefs during one direct-hit pass.
struct TraceCapture {
  std::string method = kNoTracing;
  std::string failure;                      // method "none": why nothing could be counted
  std::string available_filter_functions;
  std::string set_ftrace_filter;            // read back after writing the filter
  std::vector<std::string> profile_stats;   // profiler: trace_stat/function<cpu>, every CPU
  std::string trace;                        // tracer: the `trace` file
};

// available_filter_functions (or set_ftrace_filter): "name", "name [module]", comment
// lines starting with '#', trigger lines "name:cmd:..." (skipped). Static functions can
// share a name, so a name maps to how often it is listed.
std::map<std::string, int> parse_function_list(std::string_view text);

// The symbols that stand for FUNCTION: the name itself and the compiler's clones of it
// ("name.isra.0", "name.constprop.0", "name.part.0"), all of which run its code.
std::vector<std::string> symbols_for(const std::string& function,
                                     const std::map<std::string, int>& available);

// trace_stat/function<cpu> of the function profiler: "  <name, cut to 30 chars>  <hits>
// [time avg s^2]". Returns name -> hits; sums lines that repeat a (cut) name.
std::map<std::string, uint64_t> parse_function_profile(std::string_view text);

// The same file line by line: calls and, with the graph tracer, the time column in ns
// (the function's own time when options/graph-time is 0).
struct ProfileLine {
  uint64_t calls = 0;
  std::optional<uint64_t> own_ns;
};
std::vector<std::pair<std::string, ProfileLine>> parse_function_profile_lines(std::string_view text);

// The width at which trace_stat cuts function names ("%-30.30s").
inline constexpr size_t kProfileNameWidth = 30;

// Lines of the function tracer's `trace` file: "task-pid [cpu] flags ts: name <-parent".
// Returns name -> lines.
std::map<std::string, uint64_t> count_trace_lines(std::string_view trace);

// Events the ring buffer overwrote or dropped, from the header
// "# entries-in-buffer/entries-written: 990/1000   #P:2" (written - in buffer).
uint64_t lost_trace_events(std::string_view trace);

// The whole result of a pass: one FunctionCount per target, in target order.
std::vector<FunctionCount> count_calls(const std::vector<Target>& targets,
                                       const TraceCapture& capture);

nlohmann::json to_json(const std::vector<FunctionCount>& counts);
std::vector<FunctionCount> counts_from_json(const nlohmann::json& j);

// One "direct_hit" gate per REQUIRED function (the experiment's direct_hits for the point's
// arm; never the records' own "required"), scoped "point N": failed when the function is not
// traceable on this kernel, could not be counted, was called zero times, or has no record.
std::vector<evidence::Gate> direct_hit_gates(int point_id, const nlohmann::json& counts,
                                             const std::vector<std::string>& required);

}  // namespace ks::trace

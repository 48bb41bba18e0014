#pragma once
// Counting calls to kernel functions with ftrace, through tracefs, for the direct-hit pass
// that runs after a point's timed rounds (never during them: tracing costs time).
//
//   ks::trace::FunctionCounter counter({{"btrfs_remap_file_range", true}});  // counting now
//   ... run the workload once more ...
//   nlohmann::json counts = ks::trace::to_json(counter.stop());
//
// Prefers the function profiler (trace_stat/function<cpu>, CONFIG_FUNCTION_PROFILER) and
// falls back to the function tracer (set_ftrace_filter + lines in `trace`). Counting is
// system-wide: every task's calls count, kernel threads included.
//
// tracefs is left as it was found: current_tracer, set_ftrace_filter,
// function_profile_enabled, tracing_on and buffer_size_kb are saved before anything is
// written and restored by stop() or the destructor (also when an exception passes); tracefs
// is mounted on /sys/kernel/tracing when absent and unmounted again. Each of these is
// journaled (util/journal) before it is written, with what restoring writes back. The trace buffer's
// contents are cleared, not restored. One counter at a time per machine (a lock file).
#include <memory>
#include <string>
#include <vector>

#include "trace/direct_hit.hpp"

namespace ks::trace {

class FunctionCounter {
 public:
  // Starts counting. A kernel that cannot trace is not an exception: counting then reports
  // method "none" and why (failure()), and stop() returns that for every function. Throws
  // only Interrupted (SIGINT/SIGTERM), after restoring tracefs. METHOD: "auto" (the
  // profiler when the kernel has it, else the tracer), or kFunctionProfiler/kFunctionTracer.
  explicit FunctionCounter(std::vector<Target> targets, const std::string& method = "auto");
  ~FunctionCounter();  // restores tracefs if stop() did not; never throws
  FunctionCounter(const FunctionCounter&) = delete;
  FunctionCounter& operator=(const FunctionCounter&) = delete;

  // Stops counting, reads the counts, restores tracefs. One FunctionCount per target, in
  // order. Call once; a second call returns the same counts.
  std::vector<FunctionCount> stop();

  const std::string& method() const;   // function_profiler | function_tracer | none
  const std::string& failure() const;  // method "none": why

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// What this machine can count with, without counting anything: reads tracefs (mounting it
// for the moment when absent). method "none" comes with the reason, e.g. that
// available_filter_functions cannot be read (kernel lockdown or a security module).
struct TracingSupport {
  std::string method = kNoTracing;
  std::string reason;
  std::string tracefs;  // where tracefs is (or would be) mounted
};
TracingSupport probe_tracing();

}  // namespace ks::trace

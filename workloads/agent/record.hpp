#pragma once
// What a round produced, and the JSON lines the harness reads (start, round..., end).
// Pure: values in, JSON out. Field names are the contract in design.md ("rows[]").
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agent/clock.hpp"

namespace ks::agent {

using Json = nlohmann::ordered_json;  // keeps fields in the order written: "type" first

enum class Metric { NsPerOp, Throughput };

struct RoundResult {
  uint64_t ops = 0;         // operations completed in the timed region
  uint64_t unexpected = 0;  // results that differ from what the workload shape predicts
  uint64_t bytes = 0;       // bytes written (throughput workloads)
  ClockSpan clock;          // the timed region on both clocks
  std::optional<std::string> error;       // the round failed (set by the workload)
  std::optional<std::string> unexpected_detail;  // what the first unexpected result was
  bool fatal = false;       // the workload cannot run here at all: stop after this round
  // When an external tool measured the rate itself (fio), its figures and its JSON.
  std::optional<double> iops;
  std::optional<double> bytes_per_s;
  std::optional<Json> fio;
  // Throughput in each whole second of the timed region (buffered-write's writes): the dips a
  // round's mean hides. Empty: not sampled.
  std::vector<double> per_second_bytes;
  uint64_t canary_ns = 0;   // the slower of the canaries timed just before and just after
  std::string counters_unavailable;  // why clock.counters is empty, when it is
};

// Why the round failed, if it did: the workload's error and/or the clock check.
std::optional<std::string> round_error(const RoundResult& r);

struct RoundContext {
  std::string workload;
  Metric metric = Metric::NsPerOp;
  int64_t round = 0;  // 0.. within warm-up rounds, 0.. again within measured rounds
  bool warmup = false;
  int cpu = -1;       // sched_getcpu() at round end
};

Json round_record(const RoundContext& context, const RoundResult& r);

struct StartInfo {
  std::string workload;
  Json params;
  int64_t cpu_requested = -1;
  std::vector<int> cpu_allowed;
  std::string kernel_release;
  std::string clocksource;
  std::string agent_version;
};

Json start_record(const StartInfo& info);
Json end_record(int64_t rounds, int64_t warmup, int64_t failed_rounds);

}  // namespace ks::agent

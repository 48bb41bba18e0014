#pragma once
// What a point is doing, read from the records it produces as they come: the guest init's
// records on the results port (guest/init.sh: "guest" once booted, "storage" once the fresh
// btrfs is mounted, "workload" per workload, the agent's "round" records, the direct-hit
// pass's texts and "trace", "exit"), or on the host the agent's own lines. Pure: it names
// phases, PointContext::phase shows them.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "boot/backend.hpp"

namespace ks::boot {

struct Phase {
  std::string text;  // "workload 2 of 3: dedupe, round 4 of 10"
  bool milestone;    // a new phase (false: a round within the same workload)
};

class PhaseTracker {
 public:
  static constexpr size_t kMaxRecordBytes = size_t(1) << 20;

  explicit PhaseTracker(const experiment::Experiment& e);

  // The phase RECORD starts, if it starts one.
  std::optional<Phase> on_record(const nlohmann::json& record);
  // Records as JSON lines, fed in chunks as they arrive (a partial line waits for its end;
  // a line that is not JSON, or longer than kMaxRecordBytes, is skipped).
  std::vector<Phase> feed(std::string_view chunk);
  // The bytes of a partial line kept until its end arrives (at most kMaxRecordBytes).
  size_t waiting() const { return partial_.size(); }

 private:
  std::vector<std::string> workloads_;
  uint32_t rounds_ = 0, warmup_rounds_ = 0;
  std::string workload_;  // "workload 2 of 3: dedupe"
  bool tracing_ = false;
  std::string partial_;
};

// Tells CONTEXT's listener (if any) about PHASE.
void report_phase(const PointContext& context, const Phase& phase);

}  // namespace ks::boot

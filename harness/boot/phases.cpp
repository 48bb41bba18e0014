#include "boot/phases.hpp"

#include <algorithm>

namespace ks::boot {

using nlohmann::json;

PhaseTracker::PhaseTracker(const experiment::Experiment& e)
    : rounds_(e.rounds), warmup_rounds_(e.warmup_rounds) {
  for (auto& w : e.workloads) workloads_.push_back(w.id());
}

std::optional<Phase> PhaseTracker::on_record(const json& record) {
  if (!record.is_object() || !record.contains("type") || !record["type"].is_string()) return std::nullopt;
  const auto type = record["type"].get<std::string>();
  if (type == "guest") return Phase{"mkfs", true};  // the guest is up; the init makes the btrfs next
  if (type == "workload") {
    auto id = record.value("id", json()).is_string() ? record["id"].get<std::string>() : std::string();
    auto it = std::find(workloads_.begin(), workloads_.end(), id);
    workload_ = it == workloads_.end()
                    ? "workload " + id
                    : "workload " + std::to_string(it - workloads_.begin() + 1) + " of " +
                          std::to_string(workloads_.size()) + ": " + id;
    return Phase{workload_, true};
  }
  if (type == "round" && !workload_.empty()) {
    auto round = record.value("round", json());
    if (!round.is_number_integer()) return std::nullopt;
    bool warmup = record.value("warmup", json()).is_boolean() && record["warmup"].get<bool>();
    auto of = warmup ? warmup_rounds_ : rounds_;
    return Phase{workload_ + (warmup ? ", warm-up " : ", round ") + std::to_string(round.get<int64_t>() + 1) +
                     " of " + std::to_string(of),
                 false};
  }
  // The direct-hit pass opens with the functions it found (guest), or says it cannot count.
  if (!tracing_ && ((type == "text" && record.value("file", json()) == "available_filter_functions") ||
                    type == "trace")) {
    tracing_ = true;
    workload_.clear();
    return Phase{"tracing", true};
  }
  if (type == "exit") return Phase{"shutting down", true};
  return std::nullopt;
}

std::vector<Phase> PhaseTracker::feed(std::string_view chunk) {
  std::vector<Phase> phases;
  partial_ += chunk;
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
    auto record = json::parse(partial_.begin() + static_cast<long>(start), partial_.begin() + static_cast<long>(nl),
                              nullptr, false);
    if (auto phase = on_record(record)) phases.push_back(std::move(*phase));
  }
  partial_.erase(0, start);
  // No record is this long (a flood with no line end): its rest is not JSON, and is skipped.
  if (partial_.size() > kMaxRecordBytes) partial_.clear();
  return phases;
}

void report_phase(const PointContext& context, const Phase& phase) {
  if (context.phase) context.phase(phase.text, phase.milestone);
}

}  // namespace ks::boot

#include "agent/record.hpp"

namespace ks::agent {

std::optional<std::string> round_error(const RoundResult& r) {
  std::string error = r.error.value_or("");
  if (!clocks_agree(r.clock)) error += (error.empty() ? "" : "; ") + clock_disagreement(r.clock);
  if (error.empty()) return std::nullopt;
  return error;
}

Json round_record(const RoundContext& c, const RoundResult& r) {
  Json j;
  j["type"] = "round";
  j["workload"] = c.workload;
  j["round"] = c.round;
  j["warmup"] = c.warmup;
  j["ops"] = r.ops;
  j["elapsed_ns"] = r.clock.monotonic_ns;
  double seconds = static_cast<double>(r.clock.monotonic_ns) / 1e9;
  bool rated = r.ops > 0 && r.clock.monotonic_ns > 0;
  if (c.metric == Metric::NsPerOp) {
    j["ns_per_op"] = rated ? Json(static_cast<double>(r.clock.monotonic_ns) / static_cast<double>(r.ops))
                           : Json(nullptr);
  } else {
    j["iops"] = r.iops ? Json(*r.iops) : rated ? Json(static_cast<double>(r.ops) / seconds) : Json(nullptr);
    j["bytes_per_s"] = r.bytes_per_s ? Json(*r.bytes_per_s)
                       : rated       ? Json(static_cast<double>(r.bytes) / seconds)
                                     : Json(nullptr);
  }
  uint64_t matched = r.ops - std::min(r.unexpected, r.ops);
  j["expected_match_ratio"] =
      r.ops > 0 ? 100.0 * static_cast<double>(matched) / static_cast<double>(r.ops) : 0.0;
  j["unexpected_results"] = r.unexpected;
  if (r.unexpected_detail) j["unexpected_detail"] = *r.unexpected_detail;
  j["cpu"] = c.cpu;
  if (r.canary_ns) j["canary_ns"] = r.canary_ns;
  j["clock"] = {{"check", "CLOCK_MONOTONIC_RAW"},
                {"elapsed_check_ns", r.clock.monotonic_raw_ns},
                {"agree", clocks_agree(r.clock)}};
  if (r.clock.counters && r.ops > 0) {
    const auto& k = *r.clock.counters;
    const double ops = static_cast<double>(r.ops);
    j["counters"] = {{"instructions", k.instructions},
                     {"cycles", k.cycles},
                     {"instructions_per_op", static_cast<double>(k.instructions) / ops},
                     {"cycles_per_op", static_cast<double>(k.cycles) / ops}};
  } else if (!r.counters_unavailable.empty()) {
    j["counters"] = {{"unavailable", r.counters_unavailable}};
  }
  if (auto error = round_error(r)) j["error"] = *error;
  if (r.fio) j["fio"] = *r.fio;
  if (!r.per_second_bytes.empty()) j["per_second_bytes"] = r.per_second_bytes;
  return j;
}

Json start_record(const StartInfo& s) {
  Json j;
  j["type"] = "start";
  j["workload"] = s.workload;
  j["params"] = s.params;
  j["cpu_requested"] = s.cpu_requested;
  j["cpu_allowed"] = s.cpu_allowed;
  j["kernel_release"] = s.kernel_release;
  j["clocksource"] = s.clocksource;
  j["agent_version"] = s.agent_version;
  return j;
}

Json end_record(int64_t rounds, int64_t warmup, int64_t failed_rounds) {
  return Json{{"type", "end"}, {"rounds", rounds}, {"warmup", warmup}, {"failed_rounds", failed_rounds}};
}

}  // namespace ks::agent

#include "pipeline/records.hpp"

namespace ks::pipeline {

using nlohmann::json;

std::vector<evidence::Row> rows_from_agent(const std::vector<json>& records, int point,
                                           const std::string& arm, int block) {
  std::vector<evidence::Row> rows;
  for (auto& r : records) {
    if (r.value("type", "") != "round") continue;
    evidence::Row row;
    row.point = point;
    row.arm = arm;
    row.block = block;
    row.round = r.value("round", 0);
    row.warmup = r.value("warmup", false);
    row.workload = r.value("workload_id", r.value("workload", std::string()));
    row.ops = r.value("ops", uint64_t{0});
    row.elapsed_ns = r.value("elapsed_ns", uint64_t{0});
    for (auto [key, field] : {std::pair{"ns_per_op", &row.ns_per_op}, {"iops", &row.iops},
                              {"bytes_per_s", &row.bytes_per_s}})
      if (r.contains(key) && r[key].is_number()) *field = r[key].get<double>();
    row.expected_match_ratio = r.value("expected_match_ratio", 0.0);
    row.unexpected_results = r.value("unexpected_results", uint64_t{0});
    row.error = r.value("error", std::string());
    if (r.contains("fio")) row.fio = r["fio"];
    row.extra = json::object();
    for (const char* key : {"cpu", "clock", "canary_ns", "counters", "per_second_bytes"})
      if (r.contains(key)) row.extra[key] = r[key];
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace ks::pipeline

#pragma once
// The agent's JSON lines become bundle rows. Pure.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "evidence/bundle.hpp"

namespace ks::pipeline {

// Keeps the "round" records; the workload id comes from "workload_id" (set by the backend)
// or else the agent's "workload".
std::vector<evidence::Row> rows_from_agent(const std::vector<nlohmann::json>& records, int point,
                                           const std::string& arm, int block);

}  // namespace ks::pipeline

#include "analysis/gates.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "analysis/gate_kind.hpp"

namespace ks::analysis {
namespace {

std::size_t points_of(const evidence::WorkloadAnalysis& w, const std::string& arm) {
  return std::count_if(w.points.begin(), w.points.end(), [&](auto& p) { return p.arm == arm; });
}

}  // namespace

std::vector<evidence::Gate> point_gates(const std::vector<evidence::Point>& points) {
  std::vector<evidence::Gate> gates;
  for (auto& p : points)
    if (p.status == "failed")
      gates.push_back(make_gate(GateKind::point_failed, point_scope(p.id), false,
                                fmt::format("{} point {} failed: {}", p.arm, p.id,
                                            p.failure.empty() ? "no reason recorded" : p.failure)));
  if (gates.empty())
    gates.push_back(make_gate(GateKind::point_failed, "experiment", true,
                              fmt::format("no point failed ({} points)", points.size())));
  return gates;
}

evidence::Gate patched_failure_gate(const std::vector<evidence::Point>& points, const std::string& patched_arm) {
  std::size_t total = 0;
  std::vector<std::string> failures;
  for (auto& p : points) {
    if (p.arm != patched_arm) continue;
    ++total;
    if (p.status == "failed")
      failures.push_back(fmt::format("point {}: {}", p.id, p.failure.empty() ? "no reason recorded" : p.failure));
  }
  if (failures.empty())
    return make_gate(GateKind::patched_failed, "experiment", true,
                     fmt::format("none of the {} arm's {} point(s) failed", patched_arm, total));
  return make_gate(GateKind::patched_failed, "experiment", false,
                   fmt::format("{} failed {} of {} points ({})", patched_arm, failures.size(), total,
                               fmt::join(failures, "; ")));
}

evidence::Gate semantic_gate(const evidence::WorkloadAnalysis& w) {
  std::vector<std::string> problems;
  if (w.unexpected_results > 0)
    problems.push_back(fmt::format("{} unexpected results", w.unexpected_results));
  if (w.min_expected_match_ratio < 100.0)
    problems.push_back(fmt::format("expected_match_ratio down to {}", w.min_expected_match_ratio));
  if (w.failed_rounds > 0) problems.push_back(fmt::format("{} failed rounds", w.failed_rounds));
  if (problems.empty())
    return make_gate(GateKind::semantic, w.workload, true,
                     fmt::format("{} rows: expected_match_ratio=100, unexpected_results=0", w.rows));
  return make_gate(GateKind::semantic, w.workload, false, fmt::format("{}", fmt::join(problems, ", ")));
}

std::optional<evidence::Gate> data_gate(const evidence::WorkloadAnalysis& w,
                                        const Options& options, bool run_complete) {
  if (options.control_only)
    return make_gate(GateKind::measured, w.workload, points_of(w, options.control_arm) > 0,
                     fmt::format("an A/A run of the {} arm alone: {} point(s) measured, nothing to compare",
                                 options.control_arm, points_of(w, options.control_arm)));
  std::vector<std::string> missing;
  for (auto* arm : {&options.control_arm, &options.patched_arm})
    if (points_of(w, *arm) == 0) missing.push_back(*arm);
  const bool blocks = options.scheme == "confirm";
  if (missing.empty() && (!blocks || !w.block_ratios.empty()))
    return make_gate(GateKind::measured, w.workload, true,
                     blocks ? fmt::format("{} whole block(s), {} dropped", w.block_ratios.size(),
                                          w.blocks_dropped.size())
                            : std::string("both arms have measured rounds"));
  if (!run_complete) return std::nullopt;
  if (!missing.empty())
    return make_gate(GateKind::measured, w.workload, false,
                     fmt::format("no measured round in the {} arm", fmt::join(missing, " and ")));
  return make_gate(GateKind::measured, w.workload, false,
                   fmt::format("no whole block: all {} dropped", w.blocks_dropped.size()));
}

WorkloadsAtPoint workloads_at_points(const std::vector<evidence::Row>& rows) {
  WorkloadsAtPoint out;
  for (auto& r : rows) out[r.point].insert(r.workload);
  return out;
}

bool gate_concerns(const evidence::Gate& gate, const std::string& workload,
                   const std::vector<WorkloadSpec>& workloads, const WorkloadsAtPoint* ran) {
  if (!gate_invalidates(gate) && !gate.passed) return false;
  if (gate.scope == workload) return true;
  if (std::any_of(workloads.begin(), workloads.end(),
                  [&](auto& spec) { return spec.id == gate.scope; }))
    return false;
  if (auto point = point_of_scope(gate.scope); point && ran) {
    auto it = ran->find(*point);
    if (it != ran->end() && !it->second.empty()) return it->second.count(workload) > 0;
  }
  return true;
}

}  // namespace ks::analysis

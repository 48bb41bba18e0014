#include "analysis/gates.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

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
      gates.push_back({"point_failed", fmt::format("point {}", p.id), false,
                       fmt::format("{} point {} failed: {}", p.arm, p.id,
                                   p.failure.empty() ? "no reason recorded" : p.failure)});
  if (gates.empty())
    gates.push_back({"point_failed", "experiment", true,
                     fmt::format("no point failed ({} points)", points.size())});
  return gates;
}

evidence::Gate semantic_gate(const evidence::WorkloadAnalysis& w) {
  std::vector<std::string> problems;
  if (w.unexpected_results > 0)
    problems.push_back(fmt::format("{} unexpected results", w.unexpected_results));
  if (w.min_expected_match_ratio < 100.0)
    problems.push_back(fmt::format("expected_match_ratio down to {}", w.min_expected_match_ratio));
  if (w.failed_rounds > 0) problems.push_back(fmt::format("{} failed rounds", w.failed_rounds));
  if (problems.empty())
    return {"semantic", w.workload, true,
            fmt::format("{} rows: expected_match_ratio=100, unexpected_results=0", w.rows)};
  std::string detail = problems.front();
  for (std::size_t i = 1; i < problems.size(); ++i) detail += ", " + problems[i];
  return {"semantic", w.workload, false, detail};
}

std::optional<evidence::Gate> data_gate(const evidence::WorkloadAnalysis& w,
                                        const Options& options, bool run_complete) {
  std::vector<std::string> missing;
  for (auto* arm : {&options.control_arm, &options.patched_arm})
    if (points_of(w, *arm) == 0) missing.push_back(*arm);
  if (missing.empty())
    return evidence::Gate{"measured", w.workload, true, "both arms have measured rounds"};
  if (!run_complete) return std::nullopt;
  return evidence::Gate{"measured", w.workload, false,
                        fmt::format("no measured round in the {} arm", fmt::join(missing, " and "))};
}

std::optional<evidence::Gate> drift_gate(const evidence::WorkloadAnalysis& w,
                                         const Options& options, bool run_complete) {
  if (options.scheme != "screen") return std::nullopt;
  if (points_of(w, options.control_arm) < 2) {
    if (!run_complete) return std::nullopt;
    return evidence::Gate{"drift", w.workload, false,
                          "one control point: the sandwich needs control before and after"};
  }
  // Two readings of "drift too large", either fails the gate:
  // - |drift| above the configured bound: the machine moved between the control points;
  // - |drift| above half the |delta|, but only when the delta is material: an A/A run (or
  //   any true no-change) has delta ~ 0, so drift > |delta|/2 is then near certain and says
  //   nothing; such a run must not be INVALID for drift within the bound.
  const double drift = std::fabs(w.drift_pct), delta = std::fabs(w.delta_pct);
  std::string why;
  if (drift > options.drift_bound_pct)
    why = fmt::format("|drift| {:.3f}% > bound {:.3f}%", drift, options.drift_bound_pct);
  else if (delta >= options.material_pct && drift > delta / 2)
    why = fmt::format("|drift| {:.3f}% > half the |delta| {:.3f}%", drift, delta);
  if (!why.empty()) return evidence::Gate{"drift", w.workload, false, why};
  return evidence::Gate{"drift", w.workload, true,
                        fmt::format("|drift| {:.3f}% within bound {:.3f}% and |delta| {:.3f}%",
                                    drift, options.drift_bound_pct, delta)};
}

bool gate_concerns(const evidence::Gate& gate, const std::string& workload,
                   const std::vector<WorkloadSpec>& workloads) {
  if (gate.scope == workload) return true;
  return std::none_of(workloads.begin(), workloads.end(),
                      [&](auto& spec) { return spec.id == gate.scope; });
}

}  // namespace ks::analysis

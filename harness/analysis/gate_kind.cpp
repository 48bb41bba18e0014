#include "analysis/gate_kind.hpp"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <stdexcept>

namespace ks::analysis {

const std::vector<GateInfo>& gate_table() {
  static const std::vector<GateInfo> table{
      {GateKind::point_failed, "point_failed", "a point did not finish",
       "nothing by itself: the point's block is dropped (confirm), and a workload left "
       "without an arm fails `measured`",
       GateReach::none},
      {GateKind::patched_failed, "patched_failed",
       "a point of the patched arm did not finish (a hang, a panic, a timeout): the patched kernel "
       "may be what fails, and its survivors are no fair sample of it",
       "every workload", GateReach::scope},
      {GateKind::semantic, "semantic",
       "unexpected ioctl results, an expected_match_ratio below 100, or failed rounds",
       "the workload it names", GateReach::scope},
      {GateKind::measured, "measured",
       "a workload has no measured data for an arm (confirm: no whole block) in a finished run",
       "the workload it names", GateReach::scope},
      {GateKind::kernel_health, "kernel_health",
       "a kernel WARNING/BUG/Oops (or a log that could not be read) during a point",
       "the workloads that ran in that point", GateReach::scope},
      {GateKind::direct_hit, "direct_hit", "a required function was not shown to be called",
       "the workloads that ran in that point", GateReach::scope},
      {GateKind::matched_builds, "matched builds",
       "the control and patched kernels differ beyond the patches and the release",
       "every workload", GateReach::scope},
  };
  return table;
}

const GateInfo& gate_info(GateKind kind) {
  for (auto& info : gate_table())
    if (info.kind == kind) return info;
  throw std::logic_error("gate kind missing from gate_table()");
}

std::string gate_name(GateKind kind) { return std::string(gate_info(kind).name); }

std::optional<GateKind> gate_kind(std::string_view name) {
  for (auto& info : gate_table())
    if (info.name == name) return info.kind;
  return std::nullopt;
}

evidence::Gate make_gate(GateKind kind, std::string scope, bool passed, std::string detail) {
  return {gate_name(kind), std::move(scope), passed, std::move(detail)};
}

std::string point_scope(int point_id) { return fmt::format("point {}", point_id); }

std::optional<int> point_of_scope(const std::string& scope) {
  constexpr std::string_view prefix = "point ";
  if (scope.size() <= prefix.size() || scope.compare(0, prefix.size(), prefix) != 0)
    return std::nullopt;
  int id = 0;
  const char* first = scope.data() + prefix.size();
  const char* last = scope.data() + scope.size();
  auto [end, err] = std::from_chars(first, last, id);
  if (err != std::errc() || end != last) return std::nullopt;
  return id;
}

bool gate_invalidates(const evidence::Gate& gate) {
  if (gate.passed) return false;
  auto kind = gate_kind(gate.name);
  return !kind || gate_info(*kind).reach != GateReach::none;
}

}  // namespace ks::analysis

#pragma once
// One home for the gates: what each one is called in the bundle, what it means and what a
// failure invalidates. Every module that makes or reads a gate goes through this table
// instead of writing gate names as strings. Pure: no files, no processes.
//
// Only bad data invalidates (statistics.md, "Verdicts"). A failed point is not bad data
// of the points that ran: it drops its block (confirm) or leaves an arm without data
// (screen), which the `measured` gate then reports for the workloads it concerns. Drift is
// not a gate at all: in a screen it is evidence against a claim (analysis/verdict.hpp).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evidence/bundle.hpp"

namespace ks::analysis {

enum class GateKind {
  point_failed,    // a point did not finish (boot, agent, timeout)
  patched_failed,  // a point of the patched arm did not finish: the patch may hang or panic
  semantic,        // a workload's results were not what the operation must return
  measured,        // a workload has data for both arms (confirm: at least one whole block)
  kernel_health,   // a kernel WARNING/BUG/Oops (or an unreadable log) during a point
  direct_hit,      // a function the patch changes was not shown to be called
  matched_builds,  // the two kernels differ where they must not
};

// What a failed gate makes INVALID.
enum class GateReach {
  none,          // nothing by itself (point_failed: the data it lost is handled as data)
  scope,         // what its scope names: a workload id, the workloads that ran in
                 // "point N", or every workload for any other scope ("experiment", "builds")
};

struct GateInfo {
  GateKind kind;
  std::string_view name;         // as written in bundle.analysis.gates[].name
  std::string_view meaning;      // what a failure says
  std::string_view invalidates;  // in words, for people
  GateReach reach;
};

// The table, in the order the gates are checked.
const std::vector<GateInfo>& gate_table();
const GateInfo& gate_info(GateKind kind);
std::string gate_name(GateKind kind);
// Nothing for a name this version does not know (an older bundle's "drift", or a gate some
// other tool added); such gates invalidate their scope, as every gate did before.
std::optional<GateKind> gate_kind(std::string_view name);

evidence::Gate make_gate(GateKind kind, std::string scope, bool passed, std::string detail);

// The scope string of a point-scoped gate ("point 3") and its inverse.
std::string point_scope(int point_id);
std::optional<int> point_of_scope(const std::string& scope);

// Whether a failed gate invalidates anything at all (point_failed does not).
bool gate_invalidates(const evidence::Gate& gate);

}  // namespace ks::analysis

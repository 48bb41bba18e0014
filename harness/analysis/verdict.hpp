#pragma once
// Verdicts (statistics.md): INVALID, REGRESSION / IMPROVEMENT, NO_CHANGE, INCONCLUSIVE.
#include <optional>
#include <string>
#include <vector>

#include "analysis/analyze.hpp"
#include "analysis/decision.hpp"
#include "evidence/bundle.hpp"

namespace ks::analysis {

// ratio = patched / control; worse when it moves against the metric's good direction.
bool is_worse(double ratio, bool higher_is_better);

// |rho - 1| >= material_pct / 100.
bool is_material(double ratio, double material_pct);

// The 90% interval lies inside [1 - delta, 1 + delta].
bool is_equivalent(const evidence::WorkloadAnalysis& w, double material_pct);

// Sets verdict and material from the workload's failed gates and its decision; keeps
// blocks_needed only when INCONCLUSIVE. Material is judged on w.adjusted_ratio where the
// decision has one (a change decided at a sequential look), else on the estimate.
// `significant`: the decision claims a change and Holm's step-down reached this workload. `screen_drift_pct`: in a screen, the control
// drift A -> B on the same summaries as the decision (the points' best rounds); a claimed
// change with |drift| > |change| / 2 becomes INCONCLUSIVE, "drift could explain it".
// `tail_shift_log`: in a confirm run, a significant and material change of how far the
// patched arm's mean round lies from its best (w.tail_shift_pct). The best round of a
// wider spread is lower by itself (16 rounds at 6% spread against 2%: 7% faster with no
// change in the typical round), so a wider patched tail is never NO_CHANGE or IMPROVEMENT,
// a narrower one never NO_CHANGE or REGRESSION: those become INCONCLUSIVE, saying why.
void decide(evidence::WorkloadAnalysis& w, const std::optional<Decision>& decision,
            bool significant, const Options& options,
            std::optional<double> screen_drift_pct = std::nullopt,
            std::optional<double> tail_shift_log = std::nullopt);

// What workload W says of its run: its verdict, except that a change within the material
// threshold is NO_CHANGE when its 90% interval lies inside the equivalence band and
// INCONCLUSIVE when it does not (a change too small to matter, not shown to be that small).
// The run's verdict, its JUnit test cases and its exit code read it.
std::string run_decision(const evidence::WorkloadAnalysis& w, double material_pct);

// REGRESSION if any workload is a material regression (INVALID workloads have no
// regression to show); else INVALID if any workload is INVALID (or, with no workload, a
// gate that invalidates failed); else IMPROVEMENT if any material improvement; else
// NO_CHANGE if every workload is NO_CHANGE or a change that is not material and whose 90%
// interval lies inside the equivalence band; else INCONCLUSIVE.
std::string overall_verdict(const std::vector<evidence::WorkloadAnalysis>& workloads,
                            const std::vector<evidence::Gate>& gates, double material_pct);

}  // namespace ks::analysis

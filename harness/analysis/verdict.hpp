#pragma once
// Verdicts (statistics.md): INVALID, REGRESSION / IMPROVEMENT, NO_CHANGE, INCONCLUSIVE.
#include <string>
#include <vector>

#include "analysis/analyze.hpp"
#include "evidence/bundle.hpp"

namespace ks::analysis {

// ratio = patched / control; worse when it moves against the metric's good direction.
bool is_worse(double ratio, bool higher_is_better);

// |rho - 1| >= material_pct / 100.
bool is_material(double ratio, double material_pct);

// The 90% interval lies inside [1 - delta, 1 + delta].
bool is_equivalent(const evidence::WorkloadAnalysis& w, double material_pct);

// Sets verdict and material; keeps blocks_needed only when INCONCLUSIVE. `significant`: the
// (Holm-widened) 95% interval excludes 1.0 and Holm's step-down reached this workload.
void decide(evidence::WorkloadAnalysis& w, bool significant, const Options& options);

// INVALID if any gate failed or any workload is INVALID; else REGRESSION if any material
// regression; else IMPROVEMENT if any material improvement; else NO_CHANGE if every
// workload is NO_CHANGE or a change that is not material and whose 90% interval lies
// inside the equivalence band; else INCONCLUSIVE.
std::string overall_verdict(const std::vector<evidence::WorkloadAnalysis>& workloads,
                            const std::vector<evidence::Gate>& gates, double material_pct);

}  // namespace ks::analysis

#include "analysis/verdict.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "analysis/gate_kind.hpp"

namespace ks::analysis {
namespace {

bool any_material(const std::vector<evidence::WorkloadAnalysis>& ws, const std::string& verdict) {
  return std::any_of(ws.begin(), ws.end(),
                     [&](auto& w) { return w.verdict == verdict && w.material; });
}

}  // namespace

bool is_worse(double ratio, bool higher_is_better) {
  return higher_is_better ? ratio < 1.0 : ratio > 1.0;
}

bool is_material(double ratio, double material_pct) {
  return std::fabs(ratio - 1.0) >= material_pct / 100.0;
}

bool is_equivalent(const evidence::WorkloadAnalysis& w, double material_pct) {
  if (!w.ratio_ci90) return false;
  const double band = material_pct / 100.0;
  return w.ratio_ci90->low >= 1.0 - band && w.ratio_ci90->high <= 1.0 + band;
}

void decide(evidence::WorkloadAnalysis& w, const std::optional<Decision>& decision,
            bool significant, const Options& options, std::optional<double> screen_drift_pct,
            std::optional<double> tail_shift_log) {
  w.material = false;
  if (!w.gates_failed.empty()) {
    w.verdict = "INVALID";
  } else if (decision && decision->interval && significant) {
    const double rho = decision->interval->estimate;
    const double change_pct = 100 * (rho - 1);
    if (screen_drift_pct && std::fabs(*screen_drift_pct) > std::fabs(change_pct) / 2) {
      w.verdict = "INCONCLUSIVE";
      w.notes.push_back(fmt::format(
          "drift could explain it: the control points moved {:+.2f}% from A to B, more than "
          "half the {:+.2f}% change",
          *screen_drift_pct, change_pct));
    } else {
      w.verdict = is_worse(rho, w.higher_is_better) ? "REGRESSION" : "IMPROVEMENT";
      // Where a run stopped biases its estimate there; materiality is judged on the
      // estimate that is median-unbiased for stopping at that look.
      const double judged = w.adjusted_ratio.value_or(rho);
      w.material = is_material(judged, options.material_pct);
      if (w.adjusted_ratio && is_material(rho, options.material_pct) != w.material)
        w.notes.push_back(fmt::format(
            "the estimate at the deciding look, {:+.2f}%, is biased by where the run stopped; "
            "median-unbiased for stopping there it is {:+.2f}%, {} the material {:g}%",
            change_pct, 100 * (judged - 1), w.material ? "beyond" : "within", options.material_pct));
    }
  } else if (decision && decision->claim == Claim::equivalent) {
    w.verdict = "NO_CHANGE";
  } else {
    w.verdict = "INCONCLUSIVE";
  }
  if (tail_shift_log && w.verdict != "INVALID") {
    const bool wider = *tail_shift_log > 0;
    std::string note = fmt::format(
        "the {} arm's rounds spread {}: its mean round lies {:.2f}% {} from its best than the {} arm's "
        "(paired over the blocks, p {:.2g}), so its best round reads {} by itself",
        options.patched_arm, wider ? "wider" : "narrower", 100 * std::fabs(*tail_shift_log),
        wider ? "farther" : "nearer", options.control_arm, w.tail_shift_p.value_or(0), wider ? "better" : "worse");
    if (w.verdict == "NO_CHANGE" || w.verdict == (wider ? "IMPROVEMENT" : "REGRESSION")) {
      note += "; the best-round ratio alone would say " + w.verdict;
      w.verdict = "INCONCLUSIVE";
      w.material = false;
      w.blocks_needed.reset();  // more blocks do not settle a difference already significant
    }
    w.notes.push_back(note);
  }
  if (w.verdict != "INCONCLUSIVE") w.blocks_needed.reset();
}

std::string overall_verdict(const std::vector<evidence::WorkloadAnalysis>& workloads,
                            const std::vector<evidence::Gate>& gates, double material_pct) {
  if (any_material(workloads, "REGRESSION")) return "REGRESSION";
  const bool invalid_workload = std::any_of(workloads.begin(), workloads.end(),
                                            [](auto& w) { return w.verdict == "INVALID"; });
  const bool gate_failed = std::any_of(gates.begin(), gates.end(),
                                       [](auto& g) { return gate_invalidates(g); });
  if (invalid_workload || (workloads.empty() && gate_failed)) return "INVALID";
  if (any_material(workloads, "IMPROVEMENT")) return "IMPROVEMENT";
  const bool all_no_change = !workloads.empty() && std::all_of(workloads.begin(), workloads.end(), [&](auto& w) {
    return run_decision(w, material_pct) == "NO_CHANGE";
  });
  return all_no_change ? "NO_CHANGE" : "INCONCLUSIVE";
}

std::string run_decision(const evidence::WorkloadAnalysis& w, double material_pct) {
  if (w.material || (w.verdict != "REGRESSION" && w.verdict != "IMPROVEMENT")) return w.verdict;
  return is_equivalent(w, material_pct) ? "NO_CHANGE" : "INCONCLUSIVE";
}

}  // namespace ks::analysis

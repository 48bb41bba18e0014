// Verdict lines: one per workload with its interval and MDE, the inference details, and
// the overall verdict.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "report/builder.hpp"
#include "report/format.hpp"

namespace ks::report::detail {

std::string Builder::effect(const WorkloadAnalysis& w) const {
  return w.ratio_ci ? ratio_percent(w.ratio_ci->estimate) : signed_percent(w.delta_pct, 1);
}

std::string Builder::verdict_words(const WorkloadAnalysis& w) const {
  std::string out = w.verdict.empty() ? "no verdict" : w.verdict;
  if (w.verdict == "REGRESSION" || w.verdict == "IMPROVEMENT")
    out += w.material ? " (material)" : " (not material)";
  if (!w.gates_failed.empty()) out += " (failed: " + join(w.gates_failed, ", ") + ")";
  return out;
}

std::string Builder::verdict_prose(const WorkloadAnalysis& w) {
  if (w.verdict == "IMPROVEMENT" || w.verdict == "REGRESSION") {
    std::string word = w.verdict == "IMPROVEMENT" ? "improvement" : "regression";
    return w.material ? "a material " + word : "an " + word + " too small to be material";
  }
  if (w.verdict == "NO_CHANGE") return "no change";
  if (w.verdict.empty()) return "no verdict";
  std::string lower;
  for (char c : w.verdict)
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

std::string Builder::capitalised(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

// "95% CI -28.1% .. -25.9%"; a Holm-widened level keeps its decimal ("98.3% CI").
std::string Builder::ci_phrase(const evidence::Interval& ci) {
  double level = ci.level * 100;
  std::string shown = std::fabs(level - std::round(level)) < 0.05 ? fmt::format("{:.0f}", level)
                                                                  : fmt::format("{:.1f}", level);
  return fmt::format("{}% CI {} .. {}", shown, ratio_percent(ci.low), ratio_percent(ci.high));
}

void Builder::verdict_line(const WorkloadAnalysis& w) {
  WorkloadVerdict record;
  record.workload = w.workload;
  record.metric = w.metric;
  record.unit = unit_for(w.metric, clock_).name;
  record.verdict = w.verdict;
  record.material = w.material;
  record.change_pct = w.ratio_ci ? 100 * (w.ratio_ci->estimate - 1) : w.delta_pct;
  if (w.ratio_ci) {
    record.ci_low_pct = 100 * (w.ratio_ci->low - 1);
    record.ci_high_pct = 100 * (w.ratio_ci->high - 1);
    record.ci_level = w.ratio_ci->level;
  }
  if (w.mde_pct) record.mde_pct = *w.mde_pct;
  record.line = verdict_text(w);
  doc_.workloads.push_back(record);
  paragraph(record.line, "ks-verdict", 2);
  inference_line(w);
}

std::string Builder::verdict_text(const WorkloadAnalysis& w) const {
  Unit unit = unit_for(w.metric, clock_);
  std::string line =
      fmt::format("{}: {} vs {}: {} {}", w.workload, patched_, control_, effect(w), unit.name);
  if (w.ratio_ci) line += " (" + ci_phrase(*w.ratio_ci) + ")";
  line += ", " + verdict_words(w);
  if (w.mde_pct) line += ", MDE " + percent(*w.mde_pct, 1);
  // The analysis caps the estimate (evidence::kMaxBlocksNeeded): beyond it, no confirm run
  // of reasonable size decides the question.
  if (w.verdict == "INCONCLUSIVE" && w.blocks_needed)
    line += *w.blocks_needed >= evidence::kMaxBlocksNeeded
                ? fmt::format(", more than {} blocks needed", evidence::kMaxBlocksNeeded)
                : fmt::format(", about {} blocks needed", *w.blocks_needed);
  return line;
}

void Builder::inference_line(const WorkloadAnalysis& w) {
  std::vector<std::string> more;
  if (w.hodges_lehmann)
    more.push_back(fmt::format("Hodges-Lehmann {} ({})",
                               ratio_percent(w.hodges_lehmann->estimate),
                               ci_phrase(*w.hodges_lehmann)));
  if (w.ratio_ci90) more.push_back(ci_phrase(*w.ratio_ci90) + " (equivalence)");
  if (w.adjusted_ratio)
    more.push_back("median-unbiased for the early stop " + ratio_percent(*w.adjusted_ratio) + " (judges materiality)");
  if (w.bootstrap_ci)
    more.push_back("bootstrap " + ci_phrase(*w.bootstrap_ci) + " (descriptive, not the decision)");
  if (w.sd_log_ratio)
    more.push_back("SD of a block ratio " + percent(100 * *w.sd_log_ratio, 2));
  if (w.calibrated_sd_log_ratio)
    more.push_back("calibrated " + percent(100 * *w.calibrated_sd_log_ratio, 2));
  if (w.mde_pct && !w.mde_basis.empty()) more.push_back("MDE from the " + w.mde_basis + " SD");
  if (w.t_test_p) {
    std::string t = "t-test " + p_value(*w.t_test_p);
    if (w.degrees_of_freedom) t += fmt::format(" ({:g} df)", *w.degrees_of_freedom);
    more.push_back(t);
  }
  if (w.p_holm) more.push_back("Holm-adjusted " + p_value(*w.p_holm));
  if (w.mann_whitney_p)
    more.push_back("Mann-Whitney " + p_value(*w.mann_whitney_p) +
                   (w.mann_whitney_method.empty() ? "" : " (" + w.mann_whitney_method + ")"));
  if (w.within_point_sd_pct)
    more.push_back("SD within points " + percent(*w.within_point_sd_pct, 1));
  if (w.between_point_sd_pct)
    more.push_back("SD between points " + percent(*w.between_point_sd_pct, 1));
  if (!more.empty())
    paragraph(w.workload + ": " + join(more, ", "), "ks-inference", 2).detail = true;
}

std::vector<std::string> Builder::failed_gate_names() const {
  std::vector<std::string> names;
  if (!b_.analysis) return names;
  for (auto& g : b_.analysis->gates)
    if (!g.passed && std::find(names.begin(), names.end(), g.name) == names.end())
      names.push_back(g.name);
  return names;
}

std::vector<std::string> Builder::invalid_workloads() const {
  std::vector<std::string> names;
  if (b_.analysis)
    for (auto& w : b_.analysis->workloads)
      if (w.verdict == "INVALID") names.push_back(w.workload);
  return names;
}

std::string Builder::overall_verdict() const {
  std::string line = "Verdict: " + b_.verdict;
  // The workloads that carry it, with their change: a headline says which.
  std::vector<std::string> carried;
  if (b_.analysis)
    for (auto& w : b_.analysis->workloads)
      if ((b_.verdict == "REGRESSION" || b_.verdict == "IMPROVEMENT") ? w.verdict == b_.verdict && w.material
                                                                       : b_.verdict == "INCONCLUSIVE" && w.verdict == "INCONCLUSIVE")
        carried.push_back(w.workload + " " + effect(w));
  if (!carried.empty()) line += " (" + english_list(carried) + ")";
  auto failed = failed_gate_names();
  if (b_.verdict == "INVALID" && !failed.empty())
    line += " (failed gates: " + join(failed, ", ") + ")";
  if (auto invalid = invalid_workloads(); b_.verdict != "INVALID" && !invalid.empty())
    line += " (INVALID: " + english_list(invalid) + ")";
  if (!b_.analysis) line += " (no analysis yet)";
  if (auto why = claim_out_of_reach(); why && (b_.verdict == "NO_CHANGE" || b_.verdict == "INCONCLUSIVE"))
    line += " (the thread's effect cannot appear in this run: " + *why + ")";
  return line;
}

}  // namespace ks::report::detail

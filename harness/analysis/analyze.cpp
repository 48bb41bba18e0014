#include "analysis/analyze.hpp"

#include <algorithm>

#include "analysis/gates.hpp"
#include "analysis/inference.hpp"
#include "analysis/samples.hpp"
#include "analysis/sandwich.hpp"
#include "analysis/verdict.hpp"
#include "util/error.hpp"

namespace ks::analysis {
namespace {

struct WorkloadResult {
  evidence::WorkloadAnalysis analysis;
  std::optional<stats::LogRatioTest> test;
  std::vector<evidence::Gate> gates;
};

bool run_complete(const std::vector<evidence::Point>& points) {
  return std::none_of(points.begin(), points.end(),
                      [](auto& p) { return p.status == "pending"; });
}

WorkloadResult analyze_workload(const WorkloadSpec& spec, const std::vector<evidence::Row>& rows,
                                const Options& options, uint64_t seed, bool complete) {
  WorkloadResult r;
  auto& w = r.analysis;
  w.workload = spec.id;
  w.metric = spec.metric;
  w.higher_is_better = spec.higher_is_better;

  const auto tally = tally_rows(rows, spec.id, spec.metric);
  w.rows = tally.rows;
  w.unexpected_results = tally.unexpected_results;
  w.failed_rounds = tally.failed_rounds;
  w.min_expected_match_ratio = tally.min_expected_match_ratio;

  std::vector<PointSample> samples;
  for (auto& s : measured_samples(rows, spec.id, spec.metric))
    if (s.arm == options.control_arm || s.arm == options.patched_arm) samples.push_back(s);
  for (auto& s : samples) w.points.push_back(summarize_point(s));
  fill_sandwich(w, options.control_arm, options.patched_arm);

  r.test = fill_inference(w, arm_groups(samples, options.patched_arm),
                               arm_groups(samples, options.control_arm), options, seed);

  r.gates.push_back(semantic_gate(w));
  if (auto g = data_gate(w, options, complete)) r.gates.push_back(*g);
  if (auto g = drift_gate(w, options, complete)) r.gates.push_back(*g);
  return r;
}

std::vector<std::string> failed_gate_names(const evidence::WorkloadAnalysis& w,
                                           const std::vector<evidence::Gate>& gates,
                                           const std::vector<WorkloadSpec>& specs) {
  std::vector<std::string> names;
  for (auto& g : gates)
    if (!g.passed && gate_concerns(g, w.workload, specs) &&
        std::find(names.begin(), names.end(), g.name) == names.end())
      names.push_back(g.name);
  return names;
}

}  // namespace

evidence::Analysis analyze(const std::vector<evidence::Point>& points,
                           const std::vector<evidence::Row>& rows,
                           const std::vector<WorkloadSpec>& workloads, const Options& options,
                           const std::vector<evidence::Gate>& extra_gates) {
  evidence::Analysis a;
  a.scheme = options.scheme;
  a.bootstrap_resamples = options.bootstrap_resamples;
  a.seed = options.seed;
  a.gates = point_gates(points);

  const bool complete = run_complete(points);
  std::vector<std::optional<stats::LogRatioTest>> tests;
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    auto r = analyze_workload(workloads[i], rows, options, options.seed + i, complete);
    a.workloads.push_back(std::move(r.analysis));
    tests.push_back(std::move(r.test));
    a.gates.insert(a.gates.end(), r.gates.begin(), r.gates.end());
  }
  a.gates.insert(a.gates.end(), extra_gates.begin(), extra_gates.end());

  const auto significant = apply_holm(a.workloads, tests);
  for (std::size_t i = 0; i < a.workloads.size(); ++i) {
    auto& w = a.workloads[i];
    w.gates_failed = failed_gate_names(w, a.gates, workloads);
    decide(w, significant[i], options);
  }
  a.verdict = overall_verdict(a.workloads, a.gates, options.material_pct);
  return a;
}

int exit_code_for(const evidence::Bundle& bundle) {
  const bool point_failed = std::any_of(bundle.points.begin(), bundle.points.end(),
                                        [](auto& p) { return p.status == "failed"; });
  if (point_failed) return kExitPointFailed;
  if (!bundle.analysis) return kExitOk;
  auto& a = *bundle.analysis;
  // Any failed gate (semantic, drift, kernel health, direct hit) means the run produced no
  // verdict to trust: a nightly job must not read that as a pass.
  const bool gate_failed = std::any_of(a.gates.begin(), a.gates.end(), [](auto& g) { return !g.passed; });
  if (gate_failed) return kExitPointFailed;
  const bool material_regression = std::any_of(a.workloads.begin(), a.workloads.end(), [](auto& w) {
    return w.verdict == "REGRESSION" && w.material;
  });
  return material_regression ? kExitRegression : kExitOk;
}

}  // namespace ks::analysis

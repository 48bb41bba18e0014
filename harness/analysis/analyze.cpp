#include "analysis/analyze.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "analysis/blocks.hpp"
#include "analysis/decision.hpp"
#include "analysis/gates.hpp"
#include "analysis/inference.hpp"
#include "analysis/profile.hpp"
#include "analysis/samples.hpp"
#include "analysis/sandwich.hpp"
#include "analysis/verdict.hpp"
#include "stats/student_t.hpp"
#include "stats/summary.hpp"
#include "util/error.hpp"

namespace ks::analysis {
namespace {

struct WorkloadResult {
  evidence::WorkloadAnalysis analysis;
  Judge judge;                            // empty: nothing to decide on
  std::optional<double> screen_drift_pct;  // screen: drift of the control summaries A -> B
  std::optional<double> tail_shift_log;    // confirm: a significant, material change of the tail
  std::vector<evidence::Gate> gates;
};

// Whether a missing arm or block is final. Pending points may still bring it, unless a
// point has failed: a run may stop at a failure (continue_on_failure false), and a failed
// point that leaves a workload without data makes it INVALID (exit 3). A run that goes on
// past the failure only shows that INVALID in its intermediate bundles.
bool run_complete(const std::vector<evidence::Point>& points) {
  return std::none_of(points.begin(), points.end(),
                      [](auto& p) { return p.status == "pending"; }) ||
         std::any_of(points.begin(), points.end(), [](auto& p) { return p.status == "failed"; });
}

double pct_of_log(double log_ratio) { return 100 * (std::exp(log_ratio) - 1); }

struct Arm {
  stats::Groups rounds;
  std::vector<double> best, best_skip_first;  // each point's best round (point_best)
  bool positive = true;
};

Arm arm_of(const std::vector<PointSample>& samples, const std::string& arm, bool higher_is_better) {
  Arm a;
  for (auto& s : samples) {
    if (s.arm != arm) continue;
    a.rounds.push_back(s.values);
    a.best.push_back(point_best(s, higher_is_better));
    a.best_skip_first.push_back(point_best(s, higher_is_better, true));
    a.positive = a.positive && a.best.back() > 0 && a.best_skip_first.back() > 0;
  }
  return a;
}

// The paired t test of the blocks' tail shifts (Blocks::tail_shifts) at the level each
// workload's change is judged at (alpha over the workloads). Records the shift and its p in W;
// returns the shift when it is significant and at least material, else nothing. Under a
// deterministic clock the tails agree to the instruction and nothing is material.
std::optional<double> judge_tail(evidence::WorkloadAnalysis& w, const std::vector<double>& shifts,
                                 const Options& options, size_t workload_count) {
  if (shifts.size() < 3) return std::nullopt;
  const double k = static_cast<double>(shifts.size()), m = stats::mean(shifts), sd = stats::sample_stddev(shifts);
  const double p = sd > 0 ? std::min(1.0, 2 * stats::student_t_sf(std::fabs(m) / (sd / std::sqrt(k)), k - 1))
                          : (m == 0 ? 1.0 : 0.0);
  w.tail_shift_pct = 100 * m;
  w.tail_shift_p = p;
  const bool material = std::fabs(m) >= std::log1p(options.material_pct / 100);
  if (p < options.alpha / static_cast<double>(std::max<size_t>(workload_count, 1)) && material) return m;
  return std::nullopt;
}

double mean_log_ratio(const std::vector<double>& patched, const std::vector<double>& control) {
  return stats::mean(stats::logs(patched)) - stats::mean(stats::logs(control));
}

// A confirm run that looks after every block is judged by the sequential design.
bool sequential_design(const Options& o) {
  return o.scheme == "confirm" && o.max_blocks >= std::max(o.min_blocks, 3);
}

WorkloadResult analyze_workload(const WorkloadSpec& spec, const std::vector<evidence::Point>& points,
                                const std::vector<evidence::Row>& rows, const Options& options,
                                uint64_t seed, bool complete, std::size_t workload_count) {
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
  for (auto& s : measured_samples(points, rows, spec.id, spec.metric))
    if (s.arm == options.control_arm || s.arm == options.patched_arm) samples.push_back(s);
  int disturbed = 0;
  for (auto& s : samples) disturbed += s.disturbed;
  if (disturbed > 0)
    w.notes.push_back(fmt::format("{} round(s) left out as disturbed: the canary timed beside them took more "
                                  "than {}x its median in their arm over the run",
                                  disturbed, kDisturbedCanaryFactor));
  if (auto shift = canary_shift(samples, options.control_arm, options.patched_arm))
    w.notes.push_back(fmt::format("the canary (a fixed CPU loop timed beside each round) took {:+.1f}% time in the {} "
                                  "arm against the {} arm: the patch changes how fast this machine runs plain code "
                                  "(a finding about the patch; each arm's rounds are judged against their own arm)",
                                  100 * (*shift - 1), options.patched_arm, options.control_arm));
  if (tally.clock_rounds > 0)
    w.notes.push_back(fmt::format("{} round(s) left out as disturbed: the agent's two clocks disagreed on "
                                  "how long they took",
                                  tally.clock_rounds));
  for (auto& s : samples) w.points.push_back(summarize_point(s));
  if (options.control_only)
    w.notes.push_back(fmt::format("an A/A run of the {} arm alone (`ksandwich calibrate`): nothing to "
                                  "compare; the spread of its points is the measurement",
                                  options.control_arm));

  DecisionOptions decision_options;
  decision_options.material_pct = options.material_pct;
  decision_options.resolution_sd = options.resolution_sd_log_ratio;
  if (sequential_design(options))
    decision_options.sequential = stats::SequentialDesign{.min_blocks = std::max(options.min_blocks, 3),
                                                          .max_blocks = options.max_blocks,
                                                          .alpha = options.alpha,
                                                          .workloads = static_cast<int>(workload_count),
                                                          .material_pct = options.material_pct,
                                                          .resolution_sd = options.resolution_sd_log_ratio};
  if (auto it = options.calibrated_sd_log_ratio.find(spec.id);
      it != options.calibrated_sd_log_ratio.end()) {
    decision_options.calibrated_sd = it->second;
    w.calibrated_sd_log_ratio = it->second;
  }
  auto bind = [decision_options](auto decide_with) -> Judge {
    return [decision_options, decide_with](double alpha) {
      auto o = decision_options;
      o.alpha = alpha;
      return decide_with(o);
    };
  };

  const auto patched = arm_of(samples, options.patched_arm, spec.higher_is_better);
  const auto control = arm_of(samples, options.control_arm, spec.higher_is_better);
  const bool both = !patched.best.empty() && !control.best.empty();
  if (both && !(patched.positive && control.positive))
    w.notes.push_back("a point's best round is not positive: no ratio can be estimated");
  const bool usable = both && patched.positive && control.positive;
  if (usable)
    fill_descriptive(w, patched.rounds, control.rounds, patched.best, control.best, options,
                     seed);

  if (options.scheme == "confirm") {
    fill_arm_table(w, options.control_arm, options.patched_arm);
    auto blocks = paired_blocks(points, samples, options.control_arm, options.patched_arm, spec.higher_is_better);
    w.block_ratios = blocks.ratios;
    w.blocks_dropped = blocks.dropped;
    if (!blocks.log_ratios.empty()) {
      w.delta_pct = pct_of_log(stats::mean(blocks.log_ratios));
      const auto skipped =
          paired_blocks(points, samples, options.control_arm, options.patched_arm, spec.higher_is_better, true);
      if (!skipped.log_ratios.empty())
        w.delta_pct_skip_first = pct_of_log(stats::mean(skipped.log_ratios));
      r.judge = bind([d = blocks.log_ratios](const DecisionOptions& o) {
        return decide_paired(d, o);
      });
    }
    w.control_trend_pct_per_block = control_trend_pct_per_block(samples, options.control_arm, spec.higher_is_better);
    r.tail_shift_log = judge_tail(w, blocks.tail_shifts, options, workload_count);
  } else {
    if (options.scheme == "compare") {
      fill_arm_table(w, options.control_arm, options.patched_arm);
      if (usable) {
        w.delta_pct = pct_of_log(mean_log_ratio(patched.best, control.best));
        w.delta_pct_skip_first =
            pct_of_log(mean_log_ratio(patched.best_skip_first, control.best_skip_first));
      }
    } else {
      fill_sandwich(w, options.control_arm, options.patched_arm);
      if (usable && control.best.size() >= 2)
        r.screen_drift_pct = 100 * (control.best.back() / control.best.front() - 1);
      if (std::fabs(w.drift_pct) > options.drift_bound_pct)
        w.notes.push_back(fmt::format(
            "the control points drifted {:+.2f}%, beyond the {:g}% the experiment expects: "
            "the machine moved during the run (not a gate: drift only weighs against a claim)",
            w.drift_pct, options.drift_bound_pct));
    }
    if (usable)
      r.judge = bind([p = stats::logs(patched.best), c = stats::logs(control.best)](
                         const DecisionOptions& o) { return decide_unpaired(p, c, o); });
  }

  r.gates.push_back(semantic_gate(w));
  if (auto g = data_gate(w, options, complete)) r.gates.push_back(*g);
  return r;
}

std::vector<std::string> failed_gate_names(const evidence::WorkloadAnalysis& w,
                                           const std::vector<evidence::Gate>& gates,
                                           const std::vector<WorkloadSpec>& specs,
                                           const WorkloadsAtPoint& ran) {
  std::vector<std::string> names;
  for (auto& g : gates)
    if (!g.passed && gate_concerns(g, w.workload, specs, &ran) &&
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
  if (!options.control_only) a.gates.push_back(patched_failure_gate(points, options.patched_arm));

  const bool complete = run_complete(points);
  std::vector<Judge> judges;
  std::vector<std::optional<double>> drifts, tails;
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    auto r = analyze_workload(workloads[i], points, rows, options, options.seed + i, complete,
                              workloads.size());
    a.workloads.push_back(std::move(r.analysis));
    judges.push_back(std::move(r.judge));
    drifts.push_back(r.screen_drift_pct);
    tails.push_back(r.tail_shift_log);
    a.gates.insert(a.gates.end(), r.gates.begin(), r.gates.end());
  }
  // A gate recorded elsewhere under a name and scope the rows gave too (a finished point's
  // missing rounds beside the rows' semantic gate) is one gate, failed if either failed
  // (forty-first attack: validate matches gates by name and scope, so an honest bundle
  // failed it, and a copy of the passing one in place of the failed one passed).
  const auto from_rows = static_cast<std::ptrdiff_t>(a.gates.size());
  for (auto& g : extra_gates) {
    const auto end = a.gates.begin() + from_rows;
    auto same = std::find_if(a.gates.begin(), end, [&](auto& x) { return x.name == g.name && x.scope == g.scope; });
    if (same == end)
      a.gates.push_back(g);
    else if (!g.passed)
      *same = same->passed ? g : evidence::Gate{g.name, g.scope, false, same->detail + "; " + g.detail};
  }

  const auto ran = workloads_at_points(rows);
  const auto judged = apply_holm(a.workloads, judges, options.alpha, !sequential_design(options));
  for (std::size_t i = 0; i < a.workloads.size(); ++i) {
    auto& w = a.workloads[i];
    w.gates_failed = failed_gate_names(w, a.gates, workloads, ran);
    if (judged[i].decision) fill_decision(w, *judged[i].decision);
    decide(w, judged[i].decision, judged[i].significant, options, drifts[i], tails[i]);
    w.profile = compare_profiles(points, rows, w.workload, options.control_arm, options.patched_arm,
                                 w.verdict == "REGRESSION" || w.verdict == "IMPROVEMENT");
  }
  a.verdict = overall_verdict(a.workloads, a.gates, options.material_pct);
  return a;
}

int exit_code_for(const evidence::Bundle& bundle) {
  if (!bundle.analysis) {
    const bool point_failed = std::any_of(bundle.points.begin(), bundle.points.end(),
                                          [](auto& p) { return p.status == "failed"; });
    return point_failed ? kExitPointFailed : kExitOk;
  }
  auto& ws = bundle.analysis->workloads;
  const double material_pct = evidence::material_pct_of(bundle);
  auto any = [&](const char* decision) {
    return std::any_of(ws.begin(), ws.end(), [&](auto& w) { return run_decision(w, material_pct) == decision; });
  };
  if (any("REGRESSION")) return kExitRegression;  // a material one
  if (any("INVALID") || (ws.empty() && bundle.analysis->verdict == "INVALID"))
    return kExitPointFailed;
  // A change too small to be material and not shown equivalent is no decision either, nor
  // is a run with points still to run (thirty-seventh attack: a killed run's bundle, its
  // analysis of the points so far NO_CHANGE, exited 0 from analyze).
  if (any("INCONCLUSIVE") || bundle.analysis->verdict == "INCONCLUSIVE" || evidence::pending_points(bundle) > 0)
    return kExitInconclusive;
  return kExitOk;
}

}  // namespace ks::analysis

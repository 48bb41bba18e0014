#pragma once
// `ksandwich gather`: several runs collected into one report: a line per run (its job's
// state, verdict and exit code), for a patch series the table of what each patch adds with
// the most expensive patch named, then each run's own report. Pure: bundles in, text out.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "evidence/bundle.hpp"

namespace ks::report {

struct GatheredRun {
  std::string name;                        // the experiment's name
  std::string out_dir;                     // where its bundle was looked for
  std::string state;                       // the job's state (Slurm), or "" when not known
  std::optional<evidence::Bundle> bundle;  // absent: the run left no bundle
  int exit_code = 3;                       // the run's exit code (from its bundle; 3 without)
  std::string problem;                     // why there is no bundle, when there is none
  int patch_index = 0;                     // series: the patch this run measures (1-based)
  std::string patch_subject;
};

// What patch k adds to one workload: the step's patched-vs-control change, and its cost
// (the change signed so that + is worse: slower ns/op, fewer IOPS or bytes/s).
struct PatchCost {
  int index = 0;
  std::string subject;
  std::string workload;
  std::string metric;
  double change_pct = 0;
  double cost_pct = 0;
  std::string verdict;  // the step's verdict for the workload (its interval is in its report)
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PatchCost, index, subject, workload, metric, change_pct, cost_pct, verdict)

struct SeriesCosts {
  std::vector<PatchCost> steps;      // per measured patch and workload, in series order
  std::vector<PatchCost> costliest;  // per workload: the patch with the largest cost (> 0)
  std::vector<PatchCost> cumulative; // per workload: base -> base + every measured patch
                                     // (the steps' ratios multiplied; index 0)
  std::vector<int> unmeasured;       // patches whose run left no bundle
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SeriesCosts, steps, costliest, cumulative, unmeasured)

// The series table from the runs of a series (patch_index set on each).
SeriesCosts series_costs(const std::vector<GatheredRun>& runs);

// The exit code of the whole: 1 when any run has a material regression; else 3 when any
// run is INVALID or left no bundle; else 4 when any is INCONCLUSIVE, or when PENDING (jobs
// still queued or running: what they will show is not known); else 0. A regression or a
// failure found stands whatever is still pending (forty-fourth attack: a REGRESSION beside
// a queued job was exit 4, "no regression shown").
int gathered_exit_code(const std::vector<GatheredRun>& runs, bool pending = false);

// FORMAT text | markdown | json; SERIES: render the series table. UserError for another format.
std::string render_gathered(const std::vector<GatheredRun>& runs, bool series, const std::string& format);

}  // namespace ks::report

#pragma once
// From raw rows to per-workload statistics, gates and verdicts. Pure: values in, values out.
// The pieces live in samples / sandwich / inference / gates / verdict; this is the whole.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "evidence/bundle.hpp"

namespace ks::analysis {

struct WorkloadSpec {
  std::string id;       // as in Row::workload
  std::string metric;   // ns_per_op | iops | bytes_per_s
  bool higher_is_better = false;
};

struct Options {
  std::string scheme = "screen";  // screen | confirm | compare (two runs, unpaired)
  std::string control_arm = "control";
  std::string patched_arm = "patched";
  // Screen: a control drift beyond this is noted (the machine moved), never gated.
  double drift_bound_pct = 5.0;
  double material_pct = 1.0;
  double alpha = 0.05;            // two-sided, across the workloads (Holm)
  uint64_t bootstrap_resamples = 10000;
  uint64_t seed = 1;              // workload i (in spec order) bootstraps with seed + i
  // Per workload id: the sd of one block log ratio ln(P/C) measured by a calibration run
  // (an A/A confirm run's sd_log_ratio) on this machine, backend, build and workload
  // shape. Sets the MDE and blocks needed; lets a run without its own noise estimate
  // (zero spread, < 2 df) make a claim with the spread taken as known.
  std::map<std::string, double> calibrated_sd_log_ratio;
  // The measuring clock's resolution floor for one block log ratio (evidence/clock.hpp,
  // bundle_clock): a spread under it is taken as it, known. 0: none (wall time).
  double resolution_sd_log_ratio = 0;
  // Confirm: the looks of the group-sequential design, from min_blocks to the run's planned
  // blocks (the cap). 0: a fixed-sample decision.
  int min_blocks = 3;
  int max_blocks = 0;
  // An A/A run of the control arm alone (`ksandwich calibrate`): there is nothing to
  // compare, so a missing patched arm is no failed gate; every workload is INCONCLUSIVE.
  bool control_only = false;
};

// Rows marked warmup or carrying an error are excluded from statistics (errors count as
// failed rounds and fail the semantic gate), as are the rows of failed points.
// Schemes: screen (A B A: the 000_* table, t on ln best rounds, 1 df, drift can make a
// claim INCONCLUSIVE); confirm (paired by block: t on the block log ratios, a block that
// lost a point dropped whole); compare (two runs: t on ln best rounds of two arms).
// Gates recorded elsewhere (kernel health, direct hit, matched builds) come in
// `extra_gates`; a failed gate invalidates what it touches (analysis/gates.hpp), and one
// workload's INVALID never hides another's verdict. While points are still "pending" (and
// none has failed), a missing arm or block is not a failure.
// Deterministic: the same inputs give the same analysis, bit for bit, on any machine.
evidence::Analysis analyze(const std::vector<evidence::Point>& points,
                           const std::vector<evidence::Row>& rows,
                           const std::vector<WorkloadSpec>& workloads, const Options& options,
                           const std::vector<evidence::Gate>& extra_gates = {});

// Exit code for `ksandwich run` (design.md): 1 when any workload is a material REGRESSION
// on valid data, even if another is INVALID; else 3 when any workload is INVALID (a point
// failure that left a workload without data counts); else 4 when any is INCONCLUSIVE;
// else 0. Without an analysis: 3 if a point failed, else 0.
int exit_code_for(const evidence::Bundle& bundle);

}  // namespace ks::analysis

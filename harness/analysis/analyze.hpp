#pragma once
// From raw rows to per-workload statistics, gates and verdicts. Pure: values in, values out.
// The pieces live in samples / sandwich / inference / gates / verdict; this is the whole.
#include <cstdint>
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
  std::string scheme = "screen";  // screen | confirm
  std::string control_arm = "control";
  std::string patched_arm = "patched";
  double drift_bound_pct = 5.0;
  double material_pct = 1.0;
  uint64_t bootstrap_resamples = 10000;
  uint64_t seed = 1;              // workload i (in spec order) bootstraps with seed + i
};

// Rows marked warmup or carrying an error are excluded from statistics (errors count as
// failed rounds and fail the semantic gate). Points with status "failed" fail a gate.
// Point-level gates already recorded (kernel health, direct hit, clocksource) are taken
// from `extra_gates` and make the verdict INVALID when failed: a gate scoped to a workload
// id invalidates that workload, any other scope (a point, "experiment") every workload.
// While points are still "pending", a missing arm or control point is not a failure.
// Deterministic: the same inputs give the same analysis, bit for bit, on any machine.
evidence::Analysis analyze(const std::vector<evidence::Point>& points,
                           const std::vector<evidence::Row>& rows,
                           const std::vector<WorkloadSpec>& workloads, const Options& options,
                           const std::vector<evidence::Gate>& extra_gates = {});

// Exit code for `ksandwich run`: 3 when a point failed or any gate failed (the verdict is
// INVALID: "a point failed (boot failure, workload failure, semantic check failed)", and
// drift, kernel health and direct hit alike); else 1 on a material REGRESSION; else 0.
int exit_code_for(const evidence::Bundle& bundle);

}  // namespace ks::analysis

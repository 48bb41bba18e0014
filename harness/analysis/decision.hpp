#pragma once
// The decision for one workload, from log ratios alone: the interval that decides a change,
// the interval that decides equivalence, what the run could have detected, and why no
// claim is made when none can be. Pure maths on a few numbers.
//
// decide_paired() is the confirm scheme's seam: it takes the block log ratios
// d_i = ln(patched summary / control summary) of the whole blocks, in block order, and
// nothing else. A group-sequential stopping rule (repeated confidence intervals) replaces
// the fixed-sample t interval inside it; callers (Holm across workloads, the verdict) only
// read the Decision it returns.
#include <optional>
#include <string>
#include <vector>

#include "evidence/bundle.hpp"
#include "stats/sequential.hpp"

namespace ks::analysis {

struct DecisionOptions {
  double alpha = 0.05;         // two-sided level the change is judged at (Holm-adjusted)
  double material_pct = 1.0;   // the equivalence band +-delta, and the MDE target
  // sd of one block log ratio ln(P/C) from a calibration run of this workload (issue 10).
  // Used for the MDE and blocks needed; and, when the run itself has no noise estimate
  // (zero spread, fewer than two degrees of freedom), for the interval as a known spread.
  std::optional<double> calibrated_sd;
  // The measuring clock's resolution floor for one block log ratio (evidence/clock.hpp);
  // 0: none. An observed sd at or under it is replaced by it, taken as known (z, not t):
  // a deterministic clock's near-zero spread then makes a claim, and an honest one.
  // options.sequential carries the same floor for the looks.
  double resolution_sd = 0;
  // Confirm runs look after every block, so decide_paired judges through the group-
  // sequential design (stats/sequential.hpp): repeated confidence intervals whose
  // O'Brien-Fleming spending keeps the error rates over all looks, each workload at
  // alpha / workloads. Absent: a fixed-sample t interval at `alpha`.
  std::optional<stats::SequentialDesign> sequential;
};

enum class Claim {
  none,        // no interval, or one that neither excludes 1 nor lies inside the band
  change,      // the (1 - alpha) interval excludes 1.0
  equivalent,  // the 90% interval lies inside [1 - delta, 1 + delta]
};

struct Decision {
  double estimate_log = 0;                       // mean of the log ratios
  std::optional<evidence::Interval> interval;    // level 1 - alpha, centred on estimate_log
  std::optional<evidence::Interval> interval90;  // equivalence (two one-sided tests at 5%)
  std::optional<double> p;                       // two-sided, H0: ratio = 1
  std::optional<double> df;                      // of the interval; absent for a known spread
  std::optional<double> sd_log_ratio;            // observed sd of one block log ratio
  // Power .8 at this run's size: with options.sequential, by the design's own boundary at the
  // look after this many blocks (alpha split over the workloads); else a fixed-sample t at .05.
  std::optional<double> mde_pct;
  std::optional<int> blocks_needed;              // max_blocks (or blocks) for an MDE of material_pct, likewise
  std::string mde_basis;                         // calibrated | observed upper 80% bound | clock's resolution floor
  bool at_resolution_floor = false;              // the spread was the clock's floor, taken as known
  // A change decided by a sequential look: the median-unbiased estimate for stopping there
  // (stats::median_unbiased_log), what materiality is judged on. Absent otherwise (a fixed
  // sample does not stop on its data; at the clock's floor the estimate is exact enough).
  std::optional<double> adjusted_log;
  Claim claim = Claim::none;
  std::vector<std::string> notes;                // why no claim, what the MDE rests on
};

// Confirm: d holds one log ratio per whole block. t interval with k - 1 df centred on the
// mean of d; with options.sequential, the repeated confidence intervals of the look at
// k = d.size() blocks decide instead. No claim (and a note saying why) for k < 3 or zero
// spread unless a calibrated sd is given.
Decision decide_paired(const std::vector<double>& d, const DecisionOptions& options);

// Screen and compare: two independent samples of ln point summaries. Pooled two-sample t
// on the logs, centred on mean(ln P) - mean(ln C), kP + kC - 2 df. The same rules for no
// claim; a calibrated sd of block log ratios stands for sqrt(2) times a point's sd.
Decision decide_unpaired(const std::vector<double>& log_patched,
                         const std::vector<double>& log_control, const DecisionOptions& options);

// Upper confidence bound of a standard deviation estimated with df degrees of freedom:
// sd sqrt(df / chi2_{(1 - level), df}).
double sd_upper_bound(double sd, double df, double level = 0.80);

// Lower quantile of the chi-square distribution (0 < p < 1, df > 0).
double chi_square_quantile(double p, double df);

}  // namespace ks::analysis

#pragma once
// A group-sequential confirm run: look after every block, stop a workload as soon as its
// data decide it, and keep the error rates of a run that was sized in advance.
//
// Data: per workload, per block, d_i = ln(patched point summary / control point summary).
// At a look after k blocks the estimate is mean(d) with standard error sd(d) / sqrt(k) and
// k - 1 degrees of freedom (a paired t on the blocks).
//
// Why alpha spending with O'Brien-Fleming-type (Lan-DeMets) boundaries: the run may look
// after every block from min_blocks to max_blocks, and each look that could stop the run
// must be paid for in alpha. The OBF spending function (alpha/2 on each side,
// 2 - 2 Phi(z_{1-alpha/4} / sqrt(t)) per side) spends almost nothing while the information
// fraction t = k / max_blocks is small, so the final look keeps nearly the fixed-sample
// critical value (and power), while a large effect still stops the run early.
//
// Why repeated confidence intervals (Jennison & Turnbull, ch. 9): the boundaries c_j are
// chosen so that the intervals estimate +- c_j SE cover the true effect at every look
// simultaneously with the stated probability. One mechanism then decides both ways at any
// look, and stopping for either reason keeps both error rates:
//   - Change: the interval at level 1 - alpha/m excludes 0 (Bonferroni over m workloads,
//     so the family-wise rate of a false change over the whole run is at most alpha);
//   - Equivalent (NO_CHANGE): the interval at level 1 - 2 alpha/m lies, read as ratios,
//     strictly inside (1 - delta, 1 + delta), delta = material_pct / 100: each one-sided
//     bound is a TOST test at alpha/m, and the same Bonferroni split makes the family-wise
//     rate of a false NO_CHANGE at most alpha too. With one workload and alpha 0.05 this is
//     the usual 90% interval. Its boundaries are spent with the same OBF function (total
//     2 alpha/m, two-sided).
//
// The boundaries are computed on the z scale (known variance) and carried to the t scale
// by matching tail probabilities: c_j^t is the t quantile (k_j - 1 df) with the same
// two-sided tail as c_j. That keeps each look's own rate, but the t statistics of
// successive looks are less correlated than the z's the boundaries assume, so their union
// crossed more often (one workload at alpha 0.05, looks at 3..15 blocks: 5.5%). So the
// change boundaries are then scaled by one factor, the (1 - alpha/m) quantile of a null
// run's largest |t_k| / c_k over 100,000 seeded normal runs (the t statistic does not
// depend on the spread): the rate of a false change is alpha/m to within the simulation's
// error (5.0-5.2% at k_max 6, 15 and 40 in other seeds' runs). A single look is left as
// the exact t test. The equivalence boundaries keep the tail matching. The seeded
// simulations in tests/unit/stats/test_sequential.cpp check the resulting procedure.
#include <span>
#include <vector>

namespace ks::stats {

// Two-sided alpha spent by information fraction t in [0, 1] (Lan-DeMets O'Brien-Fleming
// type), alpha/2 on each side: 4 - 4 Phi(z_{1-alpha/4} / sqrt(t)); 0 at t = 0 and alpha at
// t = 1. This is the convention of gsDesign (sfLDOF, two-sided symmetric) and ldbounds,
// whose published boundaries the tests pin; the other reading, 2 - 2 Phi(z_{1-alpha/2} /
// sqrt(t)) for both sides together, spends more at early looks.
double obf_spent(double alpha, double t);

// z boundaries c_1..c_J of the two-sided test that looks at the increasing information
// fractions `fractions` (the last is normally 1) and first crosses |Z_j| >= c_j with
// probability obf_spent(t_j) - obf_spent(t_{j-1}) under the null. Computed by the
// recursive numerical integration of Armitage, McPherson & Rowe (1969): the sub-density of
// Z_j on the continuation region (-c_j, c_j) is carried from look to look on a Simpson
// grid. Deterministic; accurate to about 1e-5 (0.25 s for 100 looks). A look that spends
// less than ~1e-300 gets +inf.
std::vector<double> obf_boundaries(std::span<const double> fractions, double alpha);

struct SequentialDesign {
  int min_blocks = 3;         // first look; at least 3 (2 degrees of freedom)
  int max_blocks = 20;        // last look, the cap: information fraction 1
  double alpha = 0.05;        // family-wise, two-sided, over all workloads
  int workloads = 1;          // m: each workload is judged at alpha / m
  double material_pct = 1.0;  // delta in percent: what counts as a material change
  // The measuring clock's resolution floor: the sd of one d_i that the clock cannot go
  // below (evidence/clock.hpp). 0: none. A look whose observed sd is at most the floor takes
  // the floor as a known sd and judges on the z boundaries (the normal, not t with k - 1
  // df): a deterministic clock's spread of 0.002% is neither "no claim" (zero spread) nor
  // an interval of that width. Honest as long as the true sd is at most the floor.
  double resolution_sd = 0;
};

// The t-scale critical values of a design, for looks at k = min_blocks..max_blocks blocks.
struct SequentialBoundaries {
  int min_blocks = 3;
  std::vector<double> change;       // the 1 - alpha/m repeated confidence interval
  std::vector<double> equivalence;  // the 1 - 2 alpha/m repeated confidence interval
  std::vector<double> change_z, equivalence_z;  // the same on the z scale (a known sd)
};

// Throws std::invalid_argument on a bad design (3 <= min_blocks <= max_blocks, 0 < alpha
// < 0.5, workloads >= 1, material_pct > 0).
SequentialBoundaries sequential_boundaries(const SequentialDesign& design);
// The same, computed once per (min_blocks, max_blocks, alpha, workloads) in this process and
// kept (the boundaries depend on nothing else): for callers that ask often (every verdict).
const SequentialBoundaries& cached_boundaries(const SequentialDesign& design);

struct LookResult {
  enum Decision {
    Continue,    // nothing decided yet and blocks remain (also: k < min_blocks)
    Change,      // the change interval excludes 0
    Equivalent,  // the equivalence interval lies inside the material band
    NoClaim,     // the data support no claim: k < 3, zero spread, or undecided at the cap
  };
  Decision decision = NoClaim;
  bool material = false;      // |exp(estimate) - 1| >= material_pct / 100 (meaningful with Change)
  double estimate_log = 0;    // mean of the block log ratios
  double lo_log = 0, hi_log = 0;        // change interval (level 1 - alpha/m)
  double eq_lo_log = 0, eq_hi_log = 0;  // equivalence interval (level 1 - 2 alpha/m)
  int df = 0;                 // k - 1
  bool at_floor = false;      // the observed sd was at most design.resolution_sd: known sd, z scale
  double critical = 0;        // critical value of the change interval at this look (t, or z at the floor)
  double critical_equivalence = 0;
};

// One workload's look after k = block_log_ratios.size() blocks. When both hold, Change wins
// (a significant change smaller than material: reported, not material). A caller stops a
// workload at its first Change or Equivalent and keeps that decision: later blocks do not
// revisit it. Throws std::invalid_argument when k > max_blocks or a ratio is not finite.
LookResult look(const SequentialDesign& design, const SequentialBoundaries& boundaries,
                std::span<const double> block_log_ratios);
// The same, computing the boundaries (well under a second; cache them when looking often).
LookResult look(const SequentialDesign& design, std::span<const double> block_log_ratios);

// The median-unbiased estimate of an effect whose Change was decided at the look after k
// blocks with mean block log ratio `estimate_log` (Jennison & Turnbull 8.5, stagewise
// ordering). Stopping at the first decisive look inflates the estimate: a run stops early
// when its blocks happen to overshoot (in the main job's design a true +3% read as +4.6% on
// average where a change was called; docs/statistics.md).
// Outcomes more extreme than the observed one are the runs that stop for a change in the
// same direction at an earlier look, and those still running at look k whose estimate lies
// beyond it; the adjusted estimate is the effect under which they are half of all runs.
// Found by bisection over seeded simulations of this design's own looks (`paths` runs of
// normal block log ratios with sd `sd_block_log_ratio`, the run's observed sd; the same
// draws for every effect tried, so the answer is a deterministic function of its inputs).
// A change decided at the first look is left as it is (nothing earlier could have stopped
// the run); the later the look, the more runs stopped before it. Throws
// std::invalid_argument unless min_blocks <= k <= max_blocks and sd > 0.
double median_unbiased_log(const SequentialDesign& design, const SequentialBoundaries& boundaries, int k,
                           double estimate_log, double sd_block_log_ratio, int paths = 8000);

// Simulated runs of the whole procedure: each block gives every workload a normal
// d_i = effects_log[w] + sd * N(0, 1); every undecided workload is looked at after each
// block from min_blocks; the run stops when all are decided or at max_blocks. Seeded.
struct SimulatedRuns {
  double mean_blocks = 0;              // expected number of blocks per run
  std::vector<double> change_rate;     // per workload: share of runs that called a Change
  std::vector<double> material_rate;   // per workload: ... a material Change (unadjusted estimate)
  double any_material_change_rate = 0; // share of runs with a material Change on any workload
};
SimulatedRuns simulate_runs(const SequentialDesign& design, const SequentialBoundaries& boundaries,
                            double sd_block_log_ratio, std::span<const double> effects_log,
                            int runs, unsigned long long seed);

struct Plan {
  int k_max = 0;                   // blocks to plan for (max_blocks of the design)
  bool reached = false;            // false: even max_blocks gives less than the wanted power
  double power = 0;                // at k_max, see plan_blocks
  double expected_blocks_null = 0;    // mean blocks when no workload changes (simulated)
  double expected_blocks_effect = 0;  // ... when one workload changes by the target
};

// The smallest k_max in [min_blocks, max_blocks] at which a change of target_mde_pct (a
// ratio of 1 + target/100) on one workload, with between-block sd `sd_block_log_ratio` of
// d_i, is called with at least `power`. The power is the exact power of the final look
// alone, P(|T'| > c^t_{k_max}) with T' noncentral t (k_max - 1 df, ncp = ln(1 + target) /
// (sd / sqrt(k_max))): a lower bound for the sequential test, whose earlier looks can only
// add rejections (up to the rare run that stops earlier as Equivalent). The expected blocks
// come from simulate_runs (4,000 seeded runs, design with material_pct = target). Capped by
// max_blocks (then reached = false).
Plan plan_blocks(double sd_block_log_ratio, double target_mde_pct, double alpha = 0.05,
                 double power = 0.8, int workloads = 1, int min_blocks = 3, int max_blocks = 200);
// plan_blocks without the simulated expected blocks (left 0): what a verdict's "blocks
// needed" asks, quickly. When even max_blocks without interim looks falls short, power is
// that fixed-sample power (an upper bound) and no boundaries are computed.
Plan blocks_for_power(double sd_block_log_ratio, double target_mde_pct, double alpha = 0.05, double power = 0.8,
                      int workloads = 1, int min_blocks = 3, int max_blocks = 200);

}  // namespace ks::stats

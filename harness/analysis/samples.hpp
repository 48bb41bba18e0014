#pragma once
// The rows of one workload, sorted into what the statistics use and what the gates count.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "evidence/bundle.hpp"
#include "stats/bootstrap.hpp"

namespace ks::analysis {

// The measured rounds of one point: not warm-up, no error, metric present.
struct PointSample {
  int point = 0;
  int block = 0;
  std::string arm;
  std::vector<double> values;  // in round order
  int disturbed = 0;           // rounds left out: the machine was disturbed beside them
  // The point ran disturbed throughout: even its fastest canary was more than
  // kDisturbedPointFactor times its arm's usual (`canary_factor`, 0 without canaries).
  bool disturbed_throughout = false;
  double canary_factor = 0;
  double fastest_canary_ns = 0;  // 0 when no canary was timed
};

// A round is disturbed when the CPU-bound canary the agent timed beside it (rows[].extra.
// canary_ns) took more than this times the workload's median canary in its arm over the whole run:
// the same fixed work ran that much slower, so the machine took the CPU away. Fixed in
// advance, never tuned on the data it judges.
constexpr double kDisturbedCanaryFactor = 1.5;

// A point is disturbed throughout when the fastest canary of its rounds of a workload took
// more than this times the median, over its arm's points, of their fastest canaries: the
// machine was slow for the whole point, so no round of it is clean and its best round
// cannot be trusted. A confirm run drops its block (listed with the reason), and a
// calibration leaves it out. Fixed from the development VM's runs of 2026-11-30, where the
// points whose every round of a workload ran 1.3-1.8x slow had fastest canaries 1.2-1.28x
// the others' and undisturbed points stayed within 1.1x.
constexpr double kDisturbedPointFactor = 1.15;
// ... judged only for points with at least this many measured rounds: the fastest of a
// few canaries says little (in tests/data/bundles/host-confirm.json, a host run of 4 rounds
// a point made under load, the points' fastest canaries ranged from 102 to 228 ms).
constexpr size_t kDisturbedPointMinRounds = 8;

// The patched arm's usual fastest canary over the control arm's (the median over each arm's
// points of their fastest), when it is a finding about the patch: each arm has
// kCanaryShiftMinPoints timed points, the arms do not overlap (every point of one beyond
// every point of the other) and the shift is beyond kCanaryShiftNote either way. A patch
// that changes how fast the CPU runs a plain loop shows here, and the report says so.
// Otherwise nullopt: one point a side, or overlapping arms, is host noise (the A/A screen in
// tests/data/bundles/host-screen.json: -22.8% on one patched point against two controls).
std::optional<double> canary_shift(const std::vector<PointSample>& samples, const std::string& control_arm,
                                   const std::string& patched_arm);
// A shift beyond this factor either way is reported as a finding about the patch: the point
// rule's factor, the size at which a canary pooled over both arms would have dropped the
// patch's points. Smaller shifts are host noise under TCG (+5.3% between the arms of
// tests/data/bundles/qemu-confirm.json on a busy host, where the patch cannot touch a user-space loop).
constexpr double kCanaryShiftNote = kDisturbedPointFactor;
constexpr size_t kCanaryShiftMinPoints = 3;

// Counts for the semantic gate, over every row of the workload (warm-up included: a wrong
// result is wrong whether or not it was timed).
struct RowTally {
  uint64_t rows = 0;                // measured (non-warm-up) rows, failed ones included
  uint64_t unexpected_results = 0;
  uint64_t failed_rounds = 0;       // rows with an error, and measured rows without the metric
  // Rounds whose two clocks disagreed (the agent's cross-check): a disturbed measurement,
  // left out of the sample like a disturbed round, not bad data; not in failed_rounds.
  uint64_t clock_rounds = 0;
  double min_expected_match_ratio = 100.0;
};

// Rows of points that failed are left out: a failed point's data is not evidence (its
// block is dropped in a confirm run). `points` gives each point's status and block.
// Disturbed rounds are left out too and counted, unless that would leave a point empty.
std::vector<PointSample> measured_samples(const std::vector<evidence::Point>& points,
                                          const std::vector<evidence::Row>& rows,
                                          const std::string& workload, const std::string& metric);
RowTally tally_rows(const std::vector<evidence::Row>& rows, const std::string& workload,
                    const std::string& metric);
evidence::PointSummary summarize_point(const PointSample& sample);

// The summary inference reads: the point's best measured round (the lowest ns/op, the
// highest IOPS). The machine can slow a round down (a neighbour on the host, TCG's
// translation cache, reclaim) but never speed it up, and such slow stretches covered half
// of some points' rounds - more than a median resists. In the default job's A/A run on the
// 2-core development VM (6 control points under TCG) the between-point spread of ln(summary)
// was, for clone / dedupe / DIO: median 30.0% / 18.8% / 11.4%, mean 22.6% / 11.8% / 14.6%,
// best of its 8 rounds 10.4% / 11.0% / 4.4%; with 16 rounds (the main job now) a later A/A
// run gave 3.5% / 9.9% / 3.8%. Both arms are summarised alike, so the ratio compares like
// with like. `skip_first`: without the first round (when there is more than one).
double point_best(const PointSample& sample, bool higher_is_better, bool skip_first = false);

}  // namespace ks::analysis

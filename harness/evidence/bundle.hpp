#pragma once
// The evidence bundle: one neutral model. bundle.json, the text, markdown and HTML reports
// are all views of it. Pure: no files, no processes.
//
// Keys scripts rely on (see docs): schema_version, verdict, points[], rows[],
// analysis.workloads[], builds.audit[]. Keep their meanings.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ks::evidence {

inline constexpr int kSchemaVersion = 1;

// Every verdict a workload or a bundle can carry (statistics.md; the schema's enum): a
// reader refuses any other word rather than pass it on to a CI gate.
inline constexpr const char* kVerdicts[] = {"REGRESSION", "IMPROVEMENT", "NO_CHANGE", "INCONCLUSIVE", "INVALID"};

// Every metric a workload is judged by (the schema's enum; Row::metric reads each).
inline constexpr const char* kMetrics[] = {"ns_per_op", "iops", "bytes_per_s"};

// One round of one workload at one point, as the agent measured it.
struct Row {
  int point = 0;
  std::string arm;
  int block = 0;
  int round = 0;
  bool warmup = false;
  std::string workload;  // workload id (label or name)
  uint64_t ops = 0;
  uint64_t elapsed_ns = 0;
  std::optional<double> ns_per_op;
  std::optional<double> iops;
  std::optional<double> bytes_per_s;
  double expected_match_ratio = 100.0;  // percent of operations whose result was as expected
  uint64_t unexpected_results = 0;
  std::string error;                    // non-empty: the round failed (e.g. clocks disagreed)
  nlohmann::json fio;                   // fio's JSON as fio printed it (fio workload only)
  nlohmann::json extra;                 // anything else the agent reported (cpu, clocks, ...)

  std::optional<double> metric(const std::string& name) const;
  bool operator==(const Row&) const = default;
};

// One point: one boot (or, on the host backend, one fresh filesystem) running one arm.
struct Point {
  int id = 0;
  int block = 0;
  std::string arm;
  std::string status = "pending";  // pending | ok | failed
  std::string failure;             // why it failed
  std::string kernel_release;
  std::string started_at, finished_at;
  double seconds = 0;
  std::string log;                 // console / agent log, relative to the bundle directory
  std::string console_tail;        // last lines of the console when the point failed
  nlohmann::json storage;          // kind, device, size, mkfs/mount options as used
  nlohmann::json environment;      // noise controls read back: cpu, clocksource, preempt, ...
  nlohmann::json health;           // kernel log findings
  nlohmann::json direct_hit;       // ftrace call counts
  nlohmann::json profile;          // function profiles per workload (trace/profile.hpp); null: none
};

struct Gate {
  std::string name;    // semantic | drift | point_failed | kernel_health | direct_hit | clock | ...
  std::string scope;   // workload id or point id or "experiment"
  bool passed = true;
  std::string detail;
};

struct PointSummary {
  int point = 0;
  std::string arm;
  size_t n = 0;
  double mean = 0, min = 0, max = 0, stddev = 0;
  double mean_skip_first = 0;  // equals mean when n == 1
  // Shown beside the mean; inference reads each point's best round (min, or max where
  // higher is better: analysis::point_best). Bundles written before it existed read it
  // back as the mean.
  double median = 0;
};

// Confirm scheme: one whole block's patched / control ratio of point medians.
struct BlockRatio {
  int block = 0;
  int control_point = 0, patched_point = 0;  // ids (the first, if an arm ran twice)
  double control = 0, patched = 0;           // the points' best rounds
  double ratio = 1.0;                        // exp(mean ln patched - mean ln control)
};

// Confirm scheme: a block left out of the analysis, and why (a failed point, an arm
// without measured rounds of this workload).
struct DroppedBlock {
  int block = 0;
  std::string reason;
};

// Confidence interval of a ratio patched / control (1.0 = no change).
struct Interval {
  double estimate = 1.0;
  double low = 1.0;
  double high = 1.0;
  double level = 0.95;
};

// "Blocks needed" is searched up to here (twice the largest max_blocks an experiment may
// set); a report says "more than" when it is reached.
inline constexpr int kMaxBlocksNeeded = 200;

// One function of a workload's profile comparison (analysis/profile.hpp). Per op, means
// over each arm's points; own time in the clock's unit (instructions under -icount), less
// the part of the profiler's cost that falls inside each call (own_cost_per_call).
struct FunctionChange {
  std::string function;                     // as trace_stat prints it (cut to 30 characters)
  double control_calls = 0, patched_calls = 0;  // per op
  double control_own = 0, patched_own = 0;      // per op
  std::optional<double> change_se;          // standard error of patched_own - control_own; 2+ points an arm
};

// A workload's profiles compared: what its profiling passes say changed, and where.
struct ProfileComparison {
  int control_points = 0, patched_points = 0;  // points with a profile of this workload
  double cost_per_call = 0;      // the profiler's whole cost per traced call (mean over the points)
  double own_cost_per_call = 0;  // the part of it inside the call's own time; the rest falls in the caller's
  double measured_change = 0;    // the rounds: patched - control, per op (means of point medians)
  // Every profiled function's own-time change, summed, each less the profiler's whole cost of
  // its calls: per op.
  double profiled_change = 0;
  // The functions whose calls per op changed (new on the path, gone, more or fewer calls):
  // how many, and the share of measured_change their own time accounts for.
  int calls_changed = 0;
  std::optional<double> calls_changed_share_pct;
  std::vector<FunctionChange> functions;  // the largest own-time changes, largest first
};

struct WorkloadAnalysis {
  std::string workload;
  std::string metric;            // ns_per_op | iops | bytes_per_s
  bool higher_is_better = false;
  std::vector<PointSummary> points;

  // The table. Screen: the 000_* sandwich (first control, patched, last control point,
  // delta against the midpoint of the two). Confirm (and compare): control_a / control_b
  // are the first and last control points, patched and control_midpoint the means of
  // every point of each arm, and delta_pct the verdict's estimate 100 (exp(mean d) - 1).
  double control_a = 0, patched = 0, control_b = 0, control_midpoint = 0;
  double delta_pct = 0;          // screen: 100 (patched - midpoint) / midpoint
  double drift_pct = 0;          // 100 (control_b - control_a) / control_a
  double delta_pct_skip_first = 0, drift_pct_skip_first = 0;
  // Confirm: the control arm's trend over the run, % per block (least-squares slope of ln
  // control median on the block number). Reported, never gated.
  std::optional<double> control_trend_pct_per_block;
  // Confirm: how much farther the patched arm's mean round lies from its best than the
  // control's, mean over the whole blocks, 100 x log units; and the paired t test's p of
  // it. A changed tail biases the best-round ratio (analysis::decide).
  std::optional<double> tail_shift_pct;
  std::optional<double> tail_shift_p;
  std::vector<BlockRatio> block_ratios;      // confirm: the whole blocks, in block order
  std::vector<DroppedBlock> blocks_dropped;  // confirm: the blocks left out

  // Inference; absent when it could not be computed. ratio_ci / ratio_ci90: the decision
  // (analysis/decision.hpp): confirm, t on the block log ratios; screen and compare, t on
  // the ln point medians of two independent arms. ratio_ci decides REGRESSION/IMPROVEMENT
  // and is widened by Holm when there are several workloads (its level says to what);
  // ratio_ci90 decides NO_CHANGE (equivalence). Absent when the run has no noise estimate.
  std::optional<Interval> ratio_ci;
  std::optional<Interval> ratio_ci90;
  // Confirm, a change decided at a sequential look: the ratio that is median-unbiased for
  // stopping there (the decisive look's estimate, ratio_ci's, overshoots); material is
  // judged on it.
  std::optional<double> adjusted_ratio;
  std::optional<double> t_test_p;            // two-sided p of that interval's test
  std::optional<double> degrees_of_freedom;  // of it; absent for a calibrated (known) spread
  std::optional<double> sd_log_ratio;        // observed sd of one block log ratio ln(P/C)
  std::optional<double> calibrated_sd_log_ratio;  // the calibration given, if any
  std::string mde_basis;                     // calibrated | observed upper 80% bound
  std::optional<Interval> bootstrap_ci;    // 95% hierarchical bootstrap (descriptive only)
  std::optional<Interval> hodges_lehmann;  // HL ratio of point medians, distribution-free CI
  std::optional<double> mann_whitney_p;
  std::string mann_whitney_method;         // exact | asymptotic (scipy's method="auto" rule)
  std::optional<double> p_holm;            // Holm-adjusted t_test_p across the workloads
  std::optional<double> within_point_sd_pct, between_point_sd_pct;  // variance components
  std::optional<double> mde_pct;           // minimum detectable effect at power .8 (analysis::Decision)
  std::optional<int> blocks_needed;        // when INCONCLUSIVE: blocks for an MDE of delta, <= kMaxBlocksNeeded

  uint64_t rows = 0;              // measured (non-warm-up) rows, failed ones included
  uint64_t unexpected_results = 0, failed_rounds = 0;
  double min_expected_match_ratio = 100.0;
  std::string verdict;            // REGRESSION | IMPROVEMENT | NO_CHANGE | INCONCLUSIVE | INVALID
  bool material = false;
  std::vector<std::string> gates_failed;
  std::vector<std::string> notes;  // what this design cannot show (e.g. one patched point)
  std::optional<ProfileComparison> profile;  // when both arms' points have profiles of it
};

struct Analysis {
  std::string scheme;
  std::vector<WorkloadAnalysis> workloads;
  std::vector<Gate> gates;
  // REGRESSION when any workload shows a material regression on valid data; else INVALID
  // when any workload is INVALID; else IMPROVEMENT / NO_CHANGE / INCONCLUSIVE.
  std::string verdict;
  uint64_t bootstrap_resamples = 0;
  uint64_t seed = 0;
};

// Matched-build audit row: only patch identity and release may differ.
struct AuditRow {
  std::string field;
  std::string status;  // PASS | FAIL | DIFFERS (expected to differ)
  std::string control;
  std::string patched;
};

struct Bundle {
  int schema_version = kSchemaVersion;
  nlohmann::json tool;         // name, version, git_revision, command_line
  std::string created_at, updated_at;
  nlohmann::json experiment;   // the experiment file as given
  std::string experiment_name;
  std::string backend;
  nlohmann::json machine;      // host: cpu model, cores, memory, virtualization, ...
  nlohmann::json plan;         // scheme, order, rounds, warmup, seed, ...
  nlohmann::json builds;       // per-arm identity + audit[] (AuditRow as JSON)
  std::vector<Point> points;
  std::vector<Row> rows;
  std::optional<Analysis> analysis;
  std::string verdict = "INCONCLUSIVE";
  nlohmann::json extra;        // forward-compatible: keys this version does not model

  std::vector<AuditRow> audit() const;  // builds.audit[] parsed
};

nlohmann::json to_json(const Bundle& b);
Bundle from_json(const nlohmann::json& j);  // throws nlohmann::json::exception on bad shape

nlohmann::json to_json(const Row& r);
Row row_from_json(const nlohmann::json& j);
// Points of B still pending: a run not finished (it writes its analysis after every point).
size_t pending_points(const Bundle& b);
// Whether A decided every workload (none INCONCLUSIVE): where a confirm run may stop early.
bool all_decided(const Analysis& a);
// Whether B's confirm run stopped at a look with every workload decided, leaving out the
// points its plan had after that block (extra.stopped.early).
bool stopped_early(const Bundle& b);
// The material threshold, in %, B was judged with: its experiment's gates.material_pct (a
// comparison's own material_pct), else the experiment's default of 1 (experiment::Gates).
double material_pct_of(const Bundle& b);
nlohmann::json to_json(const Analysis& a);
Analysis analysis_from_json(const nlohmann::json& j);

// nlohmann ADL conversions of the analysis types (j = x; x = j.get<T>()). Readers accept
// bundles written before a key existed.
void to_json(nlohmann::json& j, const Interval& i);
void from_json(const nlohmann::json& j, Interval& i);
void to_json(nlohmann::json& j, const Gate& g);
void from_json(const nlohmann::json& j, Gate& g);
void to_json(nlohmann::json& j, const PointSummary& s);
void from_json(const nlohmann::json& j, PointSummary& s);
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(BlockRatio, block, control_point, patched_point, control,
                                   patched, ratio)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(DroppedBlock, block, reason)
void to_json(nlohmann::json& j, const FunctionChange& f);
void from_json(const nlohmann::json& j, FunctionChange& f);
void to_json(nlohmann::json& j, const ProfileComparison& c);
void from_json(const nlohmann::json& j, ProfileComparison& c);
void to_json(nlohmann::json& j, const WorkloadAnalysis& w);
void from_json(const nlohmann::json& j, WorkloadAnalysis& w);

}  // namespace ks::evidence

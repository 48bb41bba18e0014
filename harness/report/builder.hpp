#pragma once
// The builder of the report model (document.hpp), shared by the files that each add one
// part of it: content.cpp (the order of the parts, blocks, lookups), header.cpp, tables.cpp,
// verdicts.cpp, checks.cpp and reply.cpp. Private to the report module. Pure.
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "evidence/clock.hpp"
#include "report/document.hpp"

namespace ks::report::detail {

bool is_timing_row(const evidence::Row& r);
// "" when the row passed the semantic checks, else what failed.
std::string row_problem(const evidence::Row& r);
std::string size_phrase(uint64_t bytes);  // 4096 -> "4 KiB"

class Builder {
 public:
  using Bundle = evidence::Bundle;
  using Point = evidence::Point;
  using Row = evidence::Row;
  using WorkloadAnalysis = evidence::WorkloadAnalysis;
  using json = nlohmann::json;

  Builder(const Bundle& bundle, const Options& options);
  Document build();

 private:
  const Bundle& b_;
  const Options& options_;
  const evidence::Clock& clock_;  // what the rounds were timed with
  Document doc_;
  std::vector<const Point*> points_;
  std::string control_ = "control", patched_ = "patched";

  // ---- blocks and lookups (content.cpp) -----------------------------------------------

  void heading(std::string text);
  Block& paragraph(std::string text, std::string cls = {}, size_t indent = 0);
  Block& table(Table t, std::string cls);
  void preformatted(std::string text, std::string cls);
  void pick_arms();
  const Point* point(int id) const;
  std::string point_name(int id, const std::string& arm) const;
  bool confirm_scheme() const;
  std::string scheme() const;
  // Distinct values of a noise control across points, in run order.
  std::vector<std::string> environment_values(std::initializer_list<const char*> keys) const;
  // What the points read back wins over what the host says (a guest has its own
  // clocksource); a disagreement between points is shown, not hidden.
  std::string noise_control(std::initializer_list<const char*> keys) const;
  static std::string join(const std::vector<std::string>& parts, const std::string& sep);
  std::string workload_label(const std::string& id) const;
  std::string order_phrase() const;
  // Ops per round of each workload, from the rows (time-based workloads vary).
  std::string ops_phrase() const;

  // ---- what was run and where (header.cpp) --------------------------------------------

  void header();
  // ---- the thread's claim (claim.cpp) -------------------------------------------------
  struct Parallel {
    unsigned cpus;       // CPUs that ran the workload at once
    std::string reason;  // why that many
  };
  Parallel parallel_cpus() const;
  // Why the claimed effect cannot appear in this run (it needs more CPUs at once), if so.
  std::optional<std::string> claim_out_of_reach() const;
  void claim();
  // ---- what was run and where, continued (header.cpp) ---------------------------------
  std::string kernels() const;
  std::string machine_line() const;
  static std::string storage_line(const json& s);
  // One line when every point had the same storage (device names aside), else one per arm.
  std::vector<std::pair<std::string, std::string>> storage_lines() const;
  // "qemu, accelerator tcg (why)": which accelerator ran is part of what was measured.
  std::string backend_line() const;
  // What a round was timed with, what its figures are and what it cannot see.
  std::string clock_line() const;
  // Confirm: how many blocks ran, why the run stopped there, and how it was sized.
  std::string blocks_line() const;
  // When no point measured anything, tables of zeros say nothing: one line with the first
  // failure and what to do instead.
  void nothing_measured();
  std::string plan_line() const;
  // "kind tarball, version 7.1.0, sha256 f9a48549a15a...": the naming keys first.
  static std::string describe_object(const json& j);
  json arm_build(const std::string& arm) const;
  std::string source_line() const;
  std::string toolchain_line() const;
  std::vector<json> patches(const std::string& arm) const;
  std::vector<std::pair<std::string, std::string>> patch_lines() const;
  // Where the run's time went (bundle extra.timings): builds, boots, workloads, analysis.
  std::string time_line() const;
  std::string tool_line() const;

  // ---- results: sandwich, per-point and block tables, semantic checks (tables.cpp) ----

  void plots();
  // Hardware counters per op beside the clock, or why the rounds have none.
  void counters();
  void within_rounds();
  // ---- where a change happened (profile.cpp) ------------------------------------------
  std::string profile_caption(const WorkloadAnalysis& w) const;
  void profiles();
  std::string reply_profile() const;
  std::string rounds_phrase(const std::vector<const WorkloadAnalysis*>& group) const;
  void results();
  // What the design cannot show, once per note, naming the workloads when not all.
  void notes();
  // Differences in what the points read back (clocksource, governor, ...).
  void warnings();
  // `compare --allow-environment-change`: what differed between the two runs, first.
  void environment_changes();
  void sandwich(const std::vector<const WorkloadAnalysis*>& group);
  // Confirm: the paired analysis's unit, one ratio per whole block, and the blocks left out.
  void block_table(const WorkloadAnalysis& w);
  void point_table(const WorkloadAnalysis& w, bool detail);
  void semantic();

  // ---- verdict lines (verdicts.cpp) ---------------------------------------------------

  std::string effect(const WorkloadAnalysis& w) const;
  std::string verdict_words(const WorkloadAnalysis& w) const;
  static std::string verdict_prose(const WorkloadAnalysis& w);
  static std::string capitalised(std::string s);
  // "95% CI -28.1% .. -25.9%"; a Holm-widened level keeps its decimal ("98.3% CI").
  static std::string ci_phrase(const evidence::Interval& ci);
  void verdict_line(const WorkloadAnalysis& w);
  std::string verdict_text(const WorkloadAnalysis& w) const;
  void inference_line(const WorkloadAnalysis& w);
  std::vector<std::string> failed_gate_names() const;
  std::vector<std::string> invalid_workloads() const;
  std::string overall_verdict() const;

  // ---- fairness: gates, failed points, audit, direct hits, health (checks.cpp) --------

  void gates();
  void failed_points();
  static std::vector<std::string> ks_split_lines(const std::string& text);
  void audit();
  void direct_hits();
  void health();

  // ---- the mailing-list reply block (reply.cpp) ---------------------------------------

  // The bare Message-ID the reply answers: --in-reply-to, else the patch's own; "" if none.
  std::string thread_id() const;
  void reply();
  std::string reply_summary() const;
  std::string reply_table() const;
};

}  // namespace ks::report::detail

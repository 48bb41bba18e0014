// The results: the sandwich table of a screen, per-point and per-block tables of a confirm
// run, drift and skip-first sentences, semantic checks, caveats and warnings.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "report/builder.hpp"
#include "report/format.hpp"
#include "stats/summary.hpp"

namespace ks::report::detail {

constexpr size_t kMaxListedRows = 10;  // failed rows listed before "... and N more"

void Builder::plots() {
  std::vector<std::string> workloads;
  for (auto& r : b_.rows)
    if (std::find(workloads.begin(), workloads.end(), r.workload) == workloads.end())
      workloads.push_back(r.workload);
  for (auto& w : workloads) {
    Block block;
    block.kind = Block::Kind::plot;
    block.text = w;
    block.cls = "ks-plot";
    block.caption = workload_label(w);
    block.detail = true;
    if (b_.analysis)
      for (auto& a : b_.analysis->workloads)
        if (a.workload == w) {
          Unit unit = unit_for(a.metric, clock_);
          block.caption += ", " + unit.name + " (" + unit.better() + ")";
          block.note = verdict_text(a);
        }
    doc_.blocks.push_back(std::move(block));
  }
}

std::string Builder::rounds_phrase(const std::vector<const WorkloadAnalysis*>& group) const {
  std::set<size_t> n;
  bool warmup = false;
  for (auto* w : group) {
    for (auto& p : w->points) n.insert(p.n);
    for (auto& r : b_.rows) warmup = warmup || (r.warmup && r.workload == w->workload);
  }
  std::string measured = warmup ? " measured" : "";
  std::string out = n.empty()       ? "the" + measured + " rounds"
                    : n.size() == 1 ? fmt::format("all {}{} rounds", *n.begin(), measured)
                                    : fmt::format("{}-{}{} rounds per point", *n.begin(),
                                                  *n.rbegin(), measured);
  return warmup ? out + " (warm-up rounds excluded)" : out;
}

void Builder::results() {
  heading("Results");
  if (!b_.analysis || b_.analysis->workloads.empty()) {
    paragraph(fmt::format("This bundle has no analysis yet: {} rows from {} points.",
                          b_.rows.size(), points_.size()),
              "ks-no-analysis");
    semantic();
    return;
  }
  auto& workloads = b_.analysis->workloads;
  if (confirm_scheme()) {
    for (auto& w : workloads) {
      point_table(w, false);
      block_table(w);
    }
  } else {
    // One sandwich table per metric: units do not mix in a column.
    std::vector<std::string> metrics;
    for (auto& w : workloads)
      if (std::find(metrics.begin(), metrics.end(), w.metric) == metrics.end())
        metrics.push_back(w.metric);
    for (auto& metric : metrics) {
      std::vector<const WorkloadAnalysis*> group;
      for (auto& w : workloads)
        if (w.metric == metric) group.push_back(&w);
      sandwich(group);
    }
    for (auto& w : workloads) point_table(w, true);
  }
  semantic();
  counters();
  within_rounds();
  profiles();
  for (auto& w : workloads) verdict_line(w);
  notes();
}

// The dips a round's mean hides (seeds/004: "going down as low as 1100MB/s"): each arm's
// throughput in every whole second of its measured rounds, where the agent sampled it.
void Builder::within_rounds() {
  std::map<std::string, std::map<std::string, std::vector<double>>> mib;  // workload -> arm -> MiB/s
  for (auto& r : b_.rows) {
    if (r.warmup || !r.error.empty() || !r.extra.is_object() || !r.extra.contains("per_second_bytes")) continue;
    const auto& s = r.extra["per_second_bytes"];
    if (!s.is_array()) continue;
    for (auto& v : s)
      if (v.is_number() && std::isfinite(v.get<double>())) mib[r.workload][r.arm].push_back(v.get<double>() / (1 << 20));
  }
  for (auto& [workload, arms] : mib) {
    std::vector<std::string> parts;
    for (const auto& arm : {control_, patched_})
      if (auto it = arms.find(arm); it != arms.end() && !it->second.empty()) {
        auto s = stats::summarize(it->second);
        parts.push_back(fmt::format("{} min {:.1f}, median {:.1f}, sd {:.0f}% of the mean over {} seconds", arm, s.min,
                                    s.median, s.mean > 0 ? 100 * s.stddev / s.mean : 0.0, s.n));
      }
    if (!parts.empty())
      paragraph(workload_label(workload) + ": throughput in each second of the measured rounds, MiB/s: " +
                    join(parts, "; ") + ".",
                "ks-within-rounds");
  }
}

// perf-stat lines beside the clock (LKP prints them under its %change table): each
// workload's hardware counters per op, the median over each arm's measured rounds; or the
// reason the rounds have none.
void Builder::counters() {
  std::map<std::pair<std::string, std::string>, std::vector<double>> instructions, cycles;
  std::string unavailable;
  for (auto& r : b_.rows) {
    if (!is_timing_row(r) || !r.error.empty() || !r.extra.is_object() || !r.extra.contains("counters")) continue;
    const auto& c = r.extra["counters"];
    if (!c.is_object()) continue;
    if (c.contains("instructions_per_op") && c["instructions_per_op"].is_number() &&
        c.contains("cycles_per_op") && c["cycles_per_op"].is_number()) {
      instructions[{r.workload, r.arm}].push_back(c["instructions_per_op"].get<double>());
      cycles[{r.workload, r.arm}].push_back(c["cycles_per_op"].get<double>());
    } else if (unavailable.empty() && c.contains("unavailable") && c["unavailable"].is_string()) {
      unavailable = c["unavailable"].get<std::string>();
    }
  }
  if (instructions.empty()) {
    if (!unavailable.empty()) paragraph("Hardware counters: none in these rounds (" + unavailable + ").", "ks-counters");
    return;
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  paragraph("Hardware counters per op (perf_event_open, kernel included; median of the measured rounds):",
            "ks-counters-caption");
  Table t;
  t.columns = {{"workload", Align::left},        {"arm", Align::left},    {"instructions/op", Align::right},
               {"cycles/op", Align::right},      {"IPC", Align::right},   {"instr. change", Align::right}};
  for (auto& [key, values] : instructions) {
    const auto& [workload, arm] = key;
    const double ins = median(values), cyc = median(cycles[key]);
    std::string change;
    if (arm == patched_)
      if (auto base = instructions.find({workload, control_}); base != instructions.end())
        change = signed_percent(100 * (ins / median(base->second) - 1), 2);
    t.rows.push_back({workload, arm, fixed(ins, 0), fixed(cyc, 0), cyc > 0 ? fixed(ins / cyc, 2) : "n/a", change});
  }
  table(std::move(t), "ks-counters");
}

// What the design cannot show, once per note, naming the workloads when not all.
void Builder::notes() {
  auto& workloads = b_.analysis->workloads;
  std::vector<std::pair<std::string, std::vector<std::string>>> notes;
  for (auto& w : workloads)
    for (auto& note : w.notes) {
      auto it =
          std::find_if(notes.begin(), notes.end(), [&](auto& n) { return n.first == note; });
      if (it == notes.end())
        notes.push_back({note, {w.workload}});
      else
        it->second.push_back(w.workload);
    }
  if (notes.empty()) return;
  paragraph("Caveats:", "ks-notes-caption");
  for (auto& [note, names] : notes) {
    std::string scope = names.size() == workloads.size() ? "" : "(" + join(names, ", ") + ") ";
    paragraph("- " + scope + note, "ks-note", 2);
  }
}

// Differences in what the points read back (clocksource, governor, ...).
void Builder::warnings() {
  auto it = b_.extra.is_object() ? b_.extra.find("warnings") : b_.extra.end();
  if (!b_.extra.is_object() || it == b_.extra.end() || !it->is_array() || it->empty()) return;
  heading("Warnings");
  for (auto& w : *it) {
    std::string text = scalar(w);
    if (!text.empty()) paragraph("- " + text, "ks-warning", 2);
  }
}

// `compare --allow-environment-change`: what differed between the two runs, first.
void Builder::environment_changes() {
  auto it = b_.extra.is_object() ? b_.extra.find("environment_changes") : b_.extra.end();
  if (!b_.extra.is_object() || it == b_.extra.end() || !it->is_array() || it->empty()) return;
  paragraph("Environment changed between A and B (compared with --allow-environment-change); "
            "the ratios below include these differences:", "ks-environment-changes ks-bad");
  for (auto& c : *it)
    paragraph(fmt::format("- {}: {} -> {}", first_of(c, {"name"}), first_of(c, {"before"}), first_of(c, {"after"})),
              "ks-environment-change", 2);
}

void Builder::sandwich(const std::vector<const WorkloadAnalysis*>& group) {
  Unit unit = unit_for(group[0]->metric, clock_);
  std::vector<std::string> arms;
  for (auto* p : points_) arms.push_back(p->arm);
  if (arms.size() != 3) arms = {control_, patched_, control_};
  paragraph(fmt::format("In a {} sandwich, means across {}, {} ({}), each +-stddev% of "
                        "its rounds; change is {} vs the {} midpoint:",
                        join(arms, " -> "), rounds_phrase(group), unit.name, unit.better(),
                        arms[1], arms[0]),
            "ks-sandwich-caption");
  Table t;
  t.columns = {{"operation", Align::left},
               {arms[0] + " A", Align::right},
               {arms[1], Align::right},
               {arms[2] + " B", Align::right},
               {"change", Align::right}};
  for (auto* w : group) {
    // The three points in run order, each with its spread (LKP's %stddev) when known.
    auto cell = [&](size_t i, double mean) {
      std::string text = fixed(mean * unit.scale);
      if (w->points.size() == 3) text += " " + spread_percent(w->points[i].stddev, w->points[i].mean);
      return text;
    };
    t.rows.push_back({workload_label(w->workload), cell(0, w->control_a), cell(1, w->patched),
                      cell(2, w->control_b), signed_percent(w->delta_pct)});
  }
  table(std::move(t), "ks-sandwich");

  std::vector<std::string> drifts, names, skipped;
  bool rounds_to_skip = true;
  for (auto* w : group) {
    drifts.push_back(percent(w->drift_pct) + " for " + w->workload);
    names.push_back(w->workload);
    skipped.push_back(signed_percent(w->delta_pct_skip_first));
    for (auto& p : w->points) rounds_to_skip = rounds_to_skip && p.n > 1;
  }
  std::string text = "The two " + arms[0] + " points drifted by " + english_list(drifts) + ".";
  if (rounds_to_skip && !group[0]->points.empty())
    text += fmt::format(" Dropping the first round from each point produced {} {}.",
                        group.size() == 1 ? "a delta of" : "deltas of", english_list(skipped));
  paragraph(text, "ks-drift");
}

// Confirm: the paired analysis's unit, one ratio per whole block, and the blocks left out.
void Builder::block_table(const WorkloadAnalysis& w) {
  if (w.block_ratios.empty() && w.blocks_dropped.empty()) return;
  Unit unit = unit_for(w.metric, clock_);
  const size_t used = w.block_ratios.size(), dropped = w.blocks_dropped.size();
  paragraph(fmt::format("{}: {} of {} blocks used ({} dropped); per block, {} / {} of the "
                        "points' best rounds (points: {}, {}):",
                        w.workload, used, used + dropped, dropped, patched_, control_, control_,
                        patched_),
            "ks-blocks-caption");
  if (!w.block_ratios.empty()) {
    Table t;
    t.columns = {{"block", Align::right},     {"points", Align::left},
                 {control_, Align::right},    {patched_, Align::right},
                 {"ratio", Align::right},     {"change", Align::right}};
    for (auto& b : w.block_ratios)
      t.rows.push_back({std::to_string(b.block),
                        fmt::format("{}, {}", b.control_point, b.patched_point),
                        fixed(b.control * unit.scale), fixed(b.patched * unit.scale),
                        fmt::format("{:.4f}", b.ratio), signed_percent(100 * (b.ratio - 1), 2)});
    table(std::move(t), "ks-blocks");
  }
  for (auto& d : w.blocks_dropped)
    paragraph(fmt::format("- block {} dropped: {}", d.block, d.reason), "ks-block-dropped", 2);
  if (w.control_trend_pct_per_block)
    paragraph(fmt::format("{}: the {} arm trended {} per block over the run (reported, not "
                          "gated: the blocks pair it out).",
                          w.workload, control_, signed_percent(*w.control_trend_pct_per_block, 2)),
              "ks-trend");
}

void Builder::point_table(const WorkloadAnalysis& w, bool detail) {
  Unit unit = unit_for(w.metric, clock_);
  paragraph(fmt::format("{}: per-point means and medians, {} ({}):",
                        workload_label(w.workload), unit.name, unit.better()),
            "ks-points-caption")
      .detail = detail;
  // Blocks mean something only in a confirm run.
  bool blocks = confirm_scheme();
  Table t;
  t.columns = {{"point", Align::right},  {"block", Align::right},  {"arm", Align::left},
               {"mean", Align::right},   {"median", Align::right}, {"stddev", Align::right},
               {"%stddev", Align::right}, {"n", Align::right}};
  if (!blocks) t.columns.erase(t.columns.begin() + 1);
  for (auto& s : w.points) {
    const Point* p = point(s.point);
    std::vector<Cell> row = {std::to_string(s.point),
                             p ? std::to_string(p->block) : "",
                             s.arm,
                             fixed(s.mean * unit.scale),
                             fixed(s.median * unit.scale),
                             fixed(s.stddev * unit.scale),
                             spread_percent(s.stddev, s.mean),
                             std::to_string(s.n)};
    if (!blocks) row.erase(row.begin() + 1);
    t.rows.push_back(std::move(row));
  }
  Block& block = table(std::move(t), "ks-points");
  block.detail = detail;
  block.text = w.workload;
}

void Builder::semantic() {
  size_t total = 0;
  std::vector<const Row*> failed;
  for (auto& r : b_.rows) {
    if (!is_timing_row(r)) continue;
    ++total;
    if (!row_problem(r).empty()) failed.push_back(&r);
  }
  if (total == 0) {
    paragraph("No timing rows were recorded.", "ks-semantic");
    return;
  }
  if (failed.empty()) {
    paragraph(fmt::format("All {} timing rows passed the semantic checks: "
                          "expected_match_ratio=100 and unexpected_results=0.",
                          thousands(total)),
              "ks-semantic");
    return;
  }
  std::map<std::string, size_t> per_workload;
  for (auto* r : failed) ++per_workload[r->workload];
  std::vector<std::string> counts;
  for (auto& [w, n] : per_workload) counts.push_back(fmt::format("{} in {}", n, w));
  paragraph(fmt::format("{} of {} timing rows failed the semantic checks "
                        "(expected_match_ratio=100, unexpected_results=0, no round error): {}.",
                        thousands(failed.size()), thousands(total), english_list(counts)),
            "ks-semantic ks-bad");
  Table t;
  t.columns = {{"point", Align::right},
               {"arm", Align::left},
               {"round", Align::right},
               {"workload", Align::left},
               {"problem", Align::left}};
  for (size_t i = 0; i < failed.size() && i < kMaxListedRows; ++i)
    t.rows.push_back({std::to_string(failed[i]->point), failed[i]->arm,
                      std::to_string(failed[i]->round), failed[i]->workload,
                      row_problem(*failed[i])});
  if (failed.size() > kMaxListedRows)
    t.rows.push_back(
        {"", "", "", "", fmt::format("... and {} more", failed.size() - kMaxListedRows)});
  table(std::move(t), "ks-semantic-failures");
}

}  // namespace ks::report::detail

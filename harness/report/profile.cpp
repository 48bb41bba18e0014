// Where a change happened: each workload's profile comparison (analysis/profile.hpp) as a
// caption and a table of the functions whose own time per op changed most, and the short
// form the reply carries.
#include <fmt/format.h>

#include <algorithm>

#include "report/builder.hpp"
#include "report/format.hpp"
#include "util/files.hpp"

namespace ks::report::detail {
namespace {

std::string per_op(double value) { return fixed(value, 0); }
std::string calls(double value) { return fixed(value, 2); }
std::string signed_per_op(double value) { return fmt::format("{:+.0f}", value); }

// The own-time change, its standard error on hover, a bar in HTML.
Cell change_cell(const evidence::FunctionChange& f) {
  const double change = f.patched_own - f.control_own;
  Cell cell(signed_per_op(change), f.change_se ? fmt::format("{} +- {} (standard error over the points)",
                                                              signed_per_op(change), per_op(*f.change_se))
                                               : std::string());
  cell.bar = change;
  return cell;
}

}  // namespace

std::string Builder::profile_caption(const WorkloadAnalysis& w) const {
  auto& p = *w.profile;
  const std::string unit = clock_.ns_name;
  std::string text = fmt::format(
      "{}: where the time per op went. After each point's rounds, one more round of it ran under "
      "ftrace's function profiler ({} {} and {} {} points: C and P); per op, in {}: calls (exact) and each "
      "function's own time, less the {} {} of the profiler's cost that falls inside a call (the {} more of it "
      "falls in the caller's own time). ",
      workload_label(w.workload), p.control_points, control_, p.patched_points, patched_, unit,
      per_op(p.own_cost_per_call), unit,
      per_op(std::max(0.0, p.cost_per_call - p.own_cost_per_call)));
  text += fmt::format("The rounds changed by {} {}/op; the profiled functions' own time, less the profiler's cost "
                      "of their calls, by {}",
                      signed_per_op(p.measured_change), unit, signed_per_op(p.profiled_change));
  if (p.calls_changed == 0)
    text += "; no function's calls per op changed.";
  else if (p.calls_changed_share_pct)
    text += fmt::format("; the {} function{} whose calls per op changed account for {} of the measured change.",
                        p.calls_changed, p.calls_changed == 1 ? "" : "s", percent(*p.calls_changed_share_pct, 0));
  else
    text += fmt::format("; the calls per op of {} function{} changed.", p.calls_changed, p.calls_changed == 1 ? "" : "s");
  return text;
}

void Builder::profiles() {
  if (!b_.analysis) return;
  for (auto& w : b_.analysis->workloads) {
    if (!w.profile || w.profile->functions.empty()) continue;
    paragraph(profile_caption(w), "ks-profile-caption");
    if (w.verdict == "NO_CHANGE") continue;  // the caption says what little moved
    Table t;
    t.columns = {{"function", Align::left}, {"calls C", Align::right}, {"calls P", Align::right},
                 {"own C", Align::right},   {"own P", Align::right},   {"change", Align::right}};
    for (auto& f : w.profile->functions)
      t.rows.push_back({f.function, calls(f.control_calls), calls(f.patched_calls), per_op(f.control_own),
                        per_op(f.patched_own),
                        change_cell(f)});
    table(std::move(t), "ks-profile");
  }
}

// For the reply: the changed workloads' five largest own-time changes, in fixed columns.
std::string Builder::reply_profile() const {
  if (!b_.analysis) return "";
  std::string out;
  for (auto& w : b_.analysis->workloads) {
    if (!w.profile || w.profile->functions.empty() || (w.verdict != "REGRESSION" && w.verdict != "IMPROVEMENT"))
      continue;
    auto& p = *w.profile;
    out += wrap(fmt::format("Where ({}, per op, {}; C {}, P {}; function profiler{}):", w.workload,
                            clock_.ns_name, control_, patched_,
                            p.calls_changed_share_pct
                                ? fmt::format(", functions whose calls changed: {} of the change",
                                              percent(*p.calls_changed_share_pct, 0))
                                : ""),
                kReplyWidth) +
           "\n";
    out += fmt::format("  {:<30} {:>8} {:>8} {:>8} {:>8}\n", "function", "calls(C)", "calls(P)", "own(P)", "change");
    size_t shown = 0;
    for (auto& f : p.functions) {
      if (shown++ == 5) break;
      out += fmt::format("  {:<30} {:>8} {:>8} {:>8} {:>8}\n", one_line(f.function.substr(0, 64)), calls(f.control_calls),
                         calls(f.patched_calls), per_op(f.patched_own), signed_per_op(f.patched_own - f.control_own));
    }
  }
  return out;
}

}  // namespace ks::report::detail

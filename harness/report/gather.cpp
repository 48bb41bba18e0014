#include "report/gather.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "report/document.hpp"
#include "report/format.hpp"
#include "report/report.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::report {
namespace {

std::string verdict_of(const GatheredRun& r) { return r.bundle ? r.bundle->verdict : "NO BUNDLE"; }

std::string pct(double v) { return detail::signed_percent(v, 1); }

std::string cut(const std::string& s, size_t width) {
  return s.size() > width ? one_line(s.substr(0, width - 3)) + "..." : s;  // a character cut in two is '?'
}

std::string cost_line(const PatchCost& c) {
  return fmt::format("patch {} \"{}\": {} {} {} (cost {}, {})", c.index, c.subject, c.workload, c.metric,
                     pct(c.change_pct), pct(c.cost_pct), c.verdict);
}

std::string text_view(const std::vector<GatheredRun>& runs, bool series) {
  std::string out = fmt::format("ksandwich gather: {} run{}\n\n", runs.size(), runs.size() == 1 ? "" : "s");
  out += fmt::format("{:<28} {:<11} {:<13} {:>4}  {}\n", "run", "job", "verdict", "exit", "output");
  for (auto& r : runs)
    out += fmt::format("{:<28} {:<11} {:<13} {:>4}  {}\n", cut(r.name, 28), r.state.empty() ? "-" : r.state,
                       verdict_of(r), r.exit_code, r.out_dir);
  for (auto& r : runs)
    if (!r.bundle) out += fmt::format("  {}: {}\n", r.name, r.problem);
  if (series) {
    auto costs = series_costs(runs);
    out += "\nWhat each patch adds (patched vs control of its step; cost: + is worse)\n";
    out += fmt::format("{:>3}  {:<32} {:<10} {:>8} {:>8}  {}\n", "#", "patch", "workload", "change", "cost", "verdict");
    for (auto& c : costs.steps)
      out += fmt::format("{:>3}  {:<32} {:<10} {:>8} {:>8}  {}\n", c.index, cut(c.subject, 32), cut(c.workload, 10),
                         pct(c.change_pct), pct(c.cost_pct), c.verdict);
    for (int i : costs.unmeasured) out += fmt::format("{:>3}  not measured (no bundle)\n", i);
    for (auto& c : costs.cumulative)
      out += fmt::format("cumulative {} (base -> base + measured patches): {}\n", c.workload, pct(c.change_pct));
    if (costs.costliest.empty()) out += "most expensive patch: none (no patch costs anything)\n";
    for (auto& c : costs.costliest) out += "most expensive for " + c.workload + ": " + cost_line(c) + "\n";
  }
  for (auto& r : runs) {
    if (!r.bundle) continue;
    out += fmt::format("\n==== {} ({}) ====\n", r.name, r.out_dir);
    out += text(*r.bundle);
  }
  return out;
}

// Every cell escaped: a subject from a mail or a name from a bundle holding "|" or "<img"
// would add cells or markup.
std::string markdown_view(const std::vector<GatheredRun>& runs, bool series) {
  using detail::markdown_escape;
  std::string out = fmt::format("# ksandwich gather: {} runs\n\n| run | job | verdict | exit | output |\n|---|---|---|---:|---|\n",
                                runs.size());
  for (auto& r : runs)
    out += fmt::format("| {} | {} | {} | {} | {} |\n", markdown_escape(r.name), markdown_escape(r.state.empty() ? "-" : r.state),
                       markdown_escape(verdict_of(r)), r.exit_code, markdown_escape(r.out_dir));
  if (series) {
    auto costs = series_costs(runs);
    out += "\n## What each patch adds\n\n| # | patch | workload | change | cost | verdict |\n|---:|---|---|---:|---:|---|\n";
    for (auto& c : costs.steps)
      out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", c.index, markdown_escape(c.subject), markdown_escape(c.workload),
                         pct(c.change_pct), pct(c.cost_pct), markdown_escape(c.verdict));
    out += "\n";
    for (auto& c : costs.costliest)
      out += "**Most expensive for " + markdown_escape(c.workload) + "**: " + markdown_escape(cost_line(c)) + "\n\n";
  }
  for (auto& r : runs)
    if (r.bundle) out += "\n---\n\n" + markdown(*r.bundle);
  return out;
}

std::string json_view(const std::vector<GatheredRun>& runs, bool series) {
  nlohmann::json j{{"runs", nlohmann::json::array()}, {"exit_code", gathered_exit_code(runs)}};
  for (auto& r : runs) {
    nlohmann::json run{{"name", r.name},          {"out_dir", r.out_dir}, {"state", r.state},
                       {"verdict", verdict_of(r)}, {"exit_code", r.exit_code}, {"problem", r.problem}};
    if (r.bundle) run["report"] = nlohmann::json::parse(json(*r.bundle));
    j["runs"].push_back(run);
  }
  if (series) j["series"] = series_costs(runs);
  // Anyone's words (a run's problem, a bundle's fields) as \u escapes: nothing a terminal acts on.
  return j.dump(2, ' ', true, nlohmann::json::error_handler_t::replace) + "\n";  // not UTF-8: U+FFFD
}

}  // namespace

SeriesCosts series_costs(const std::vector<GatheredRun>& runs) {
  SeriesCosts costs;
  std::map<std::string, PatchCost> worst, total;
  std::vector<std::string> order;
  for (auto& r : runs) {
    if (!r.bundle || !r.bundle->analysis) {
      costs.unmeasured.push_back(r.patch_index);
      continue;
    }
    for (auto& w : r.bundle->analysis->workloads) {
      PatchCost c{r.patch_index, r.patch_subject, w.workload, w.metric, w.delta_pct,
                  w.higher_is_better ? -w.delta_pct : w.delta_pct, w.verdict};
      costs.steps.push_back(c);
      if (!total.count(w.workload)) {
        order.push_back(w.workload);
        total[w.workload] = PatchCost{0, "base -> base + measured patches", w.workload, w.metric, 0, 0, "CUMULATIVE"};
      }
      auto& t = total[w.workload];
      t.change_pct = 100 * ((1 + t.change_pct / 100) * (1 + w.delta_pct / 100) - 1);
      t.cost_pct = w.higher_is_better ? -t.change_pct : t.change_pct;
      if (c.cost_pct > 0 && (!worst.count(w.workload) || c.cost_pct > worst[w.workload].cost_pct))
        worst[w.workload] = c;
    }
  }
  for (auto& name : order) {
    costs.cumulative.push_back(total[name]);
    if (worst.count(name)) costs.costliest.push_back(worst[name]);
  }
  return costs;
}

int gathered_exit_code(const std::vector<GatheredRun>& runs, bool pending) {
  int code = 0;
  auto rank = [](int c) { return c == 1 ? 3 : c == 3 ? 2 : c == 4 ? 1 : 0; };
  for (auto& r : runs) {
    int c = r.bundle ? r.exit_code : 3;
    if (c != 0 && c != 1 && c != 3 && c != 4) c = 3;  // a run that failed outright counts as INVALID
    if (rank(c) > rank(code)) code = c;
  }
  return pending && code == 0 ? 4 : code;
}

namespace {

// RUNS with each text that came from a mail or a job on one line: a subject holding
// "\nVerdict: ..." cannot start a line of the table (a bundle's words are names or from a
// table, checked when it was read; each run's own report is cleaned by its renderer). A
// subject is cut, as a mail's can be any length (sixty-ninth attack: 100 KB on one line).
std::vector<GatheredRun> one_line_fields(std::vector<GatheredRun> runs) {
  for (auto& r : runs) {
    for (auto* s : {&r.name, &r.out_dir, &r.state, &r.problem}) *s = one_line(*s);
    r.patch_subject = one_line_cut(r.patch_subject);
  }
  return runs;
}

}  // namespace

std::string render_gathered(const std::vector<GatheredRun>& runs, bool series, const std::string& format) {
  // Subjects and names come from mail and bundles: no control character reaches a terminal.
  if (format == "text") return printable_lines(text_view(one_line_fields(runs), series));
  if (format == "markdown") return printable_lines(markdown_view(one_line_fields(runs), series));
  if (format == "json") return json_view(runs, series);
  throw UserError("gather: unknown format `" + format + "`", "use --format text, markdown or json");
}

}  // namespace ks::report

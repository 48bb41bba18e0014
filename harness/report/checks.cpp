// Evidence that the comparison was fair: gates, failed points, the matched-build audit,
// direct hits and kernel health.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "report/builder.hpp"
#include "report/format.hpp"
#include "util/files.hpp"

namespace ks::report::detail {

void Builder::gates() {
  if (!b_.analysis || b_.analysis->gates.empty()) return;
  auto& all = b_.analysis->gates;
  heading("Gates");
  std::vector<const evidence::Gate*> failed;
  std::vector<std::string> names;
  for (auto& g : all) {
    if (!g.passed) failed.push_back(&g);
    if (std::find(names.begin(), names.end(), g.name) == names.end()) names.push_back(g.name);
  }
  if (failed.empty()) {
    paragraph(all.size() == 1
                  ? fmt::format("The one gate ({}) passed.", names[0])
                  : fmt::format("All {} gates passed ({}).", all.size(), join(names, ", ")),
              "ks-gates-summary");
  } else {
    paragraph(fmt::format("{} of {} gates failed:", failed.size(), all.size()),
              "ks-gates-summary ks-bad");
    for (auto* g : failed)
      paragraph(fmt::format("- {} ({}): {}", g->name, g->scope.empty() ? "experiment" : g->scope,
                            g->detail.empty() ? "failed" : g->detail),
                "ks-gate-failed", 2);
  }
  Table t;
  t.columns = {{"gate", Align::left},
               {"scope", Align::left},
               {"status", Align::left},
               {"detail", Align::left}};
  for (auto& g : all) t.rows.push_back({g.name, g.scope, g.passed ? "PASS" : "FAIL", g.detail});
  table(std::move(t), "ks-gates").detail = true;
}

void Builder::failed_points() {
  std::vector<const Point*> failed, pending;
  for (auto* p : points_) {
    if (p->status == "failed")
      failed.push_back(p);
    else if (p->status != "ok")
      pending.push_back(p);
  }
  if (failed.empty() && pending.empty()) return;
  heading("Failed points");
  for (auto* p : failed) {
    std::string where = confirm_scheme() ? fmt::format("{}, block {}", p->arm, p->block) : p->arm;
    paragraph(fmt::format("Point {} ({}) failed: {}{}", p->id, where,
                          p->failure.empty() ? "no reason recorded" : p->failure,
                          p->console_tail.empty() ? "" : ". The console ended with:"),
              "ks-failure", 2);
    if (!p->console_tail.empty()) {
      std::string tail;
      for (auto& line : ks_split_lines(p->console_tail)) tail += "    " + line + "\n";
      preformatted(tail, "ks-console");
    }
  }
  if (!pending.empty()) {
    std::vector<std::string> names;
    for (auto* p : pending) names.push_back(point_name(p->id, p->arm) + " " + p->status);
    paragraph("Not measured: " + english_list(names) + ".", "ks-pending", 2);
  }
}

std::vector<std::string> Builder::ks_split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

void Builder::audit() {
  if (!b_.builds.is_object() || !b_.builds.contains("audit") || !b_.builds["audit"].is_array())
    return;
  auto& rows = b_.builds["audit"];
  bool notes = false;
  for (auto& r : rows) notes = notes || !first_of(r, {"note"}).empty();
  heading("Matched-build audit");
  Table t;
  t.columns = {{"field", Align::left},
               {"status", Align::left},
               {control_, Align::left},
               {patched_, Align::left}};
  if (notes) t.columns.push_back({"note", Align::left});
  std::vector<std::string> failed;
  auto cell = [](const std::string& v) {
    return shorten(v) == v ? Cell(v) : Cell(shorten(v), v);
  };
  for (auto& r : rows) {
    std::string field = first_of(r, {"field"});
    std::string status = first_of(r, {"status"});
    if (status == "FAIL") failed.push_back(field);
    std::vector<Cell> row = {field, status, cell(first_of(r, {"control"})),
                             cell(first_of(r, {"patched"}))};
    if (notes) row.push_back(first_of(r, {"note"}));
    t.rows.push_back(std::move(row));
  }
  if (failed.empty())
    paragraph(fmt::format("The two builds match in every audited field ({} fields; only the "
                          "patches and what follows from them may differ).",
                          rows.size()),
              "ks-audit-summary");
  else
    paragraph("The builds differ where they must not: " + english_list(failed) + ".",
              "ks-audit-summary ks-bad");
  table(std::move(t), "ks-audit");
}

void Builder::direct_hits() {
  Table t;
  t.columns = {{"point", Align::right}, {"arm", Align::left},      {"function", Align::left},
               {"calls", Align::right}, {"required", Align::left}, {"status", Align::left}};
  std::vector<std::string> sentences;
  for (auto* p : points_) {
    if (!p->direct_hit.is_array() || p->direct_hit.empty()) continue;
    std::vector<std::string> hits, missing;
    for (auto& e : p->direct_hit) {
      if (!e.is_object()) continue;
      std::string function = first_of(e, {"function"});
      bool available = field_or(e, "available", true);
      bool filtered = field_or(e, "filtered", true);
      bool required = field_or(e, "required", false);
      uint64_t calls = count_of(e, "calls").value_or(0);
      std::string status;
      if (!available)
        status = "not traceable";
      else if (!filtered)
        status = "not in the filter";
      else if (calls > 0)
        status = "hit";
      else
        status = required ? "NOT HIT" : "not hit";
      t.rows.push_back({std::to_string(p->id), p->arm, function,
                        available && filtered ? thousands(calls) : "-", required ? "yes" : "no",
                        status});
      std::string counted = thousands(calls) + (hits.empty() ? " calls to " : " to ") + function;
      if (available && filtered)
        hits.push_back(counted);
      else
        missing.push_back(function);
    }
    std::string sentence = fmt::format("Point {} ({})", p->id, p->arm);
    if (!hits.empty()) sentence += " observed " + english_list(hits);
    if (!missing.empty())
      sentence +=
          std::string(hits.empty() ? "" : ";") + " could not trace " + english_list(missing);
    sentences.push_back(sentence + ".");
  }
  if (t.rows.empty()) return;
  heading("Direct hits (ftrace)");
  table(std::move(t), "ks-direct-hit");
  paragraph(join(sentences, " "), "ks-direct-hit-summary");
}

void Builder::health() {
  bool any = false;
  for (auto* p : points_) any = any || (p->health.is_object() && !p->health.empty());
  if (!any) return;
  heading("Kernel health");
  for (auto* p : points_) {
    const json& h = p->health;
    std::string name = point_name(p->id, p->arm);
    if (!h.is_object() || h.empty()) {
      paragraph(name + ": kernel log not checked", "ks-health", 2);
      continue;
    }
    std::string scanned;
    if (auto lines = count_of(h, "scanned_lines"))
      scanned = " (" + thousands(*lines) + " lines scanned)";
    auto findings = h.find("findings");
    if (findings == h.end() || !findings->is_array() || findings->empty()) {
      paragraph(name + ": kernel log clean" + scanned, "ks-health");
      continue;
    }
    paragraph(fmt::format("{}: {} finding{}{}:", name, findings->size(),
                          findings->size() == 1 ? "" : "s", scanned),
              "ks-health ks-bad");
    std::string lines;
    for (auto& f : *findings) {
      std::string kind = first_of(f, {"kind"});
      std::string line = first_of(f, {"line"});
      lines += "    " + one_line((kind.empty() ? "" : "[" + kind + "] ") + line) + "\n";
    }
    preformatted(lines, "ks-health-findings");
  }
}

}  // namespace ks::report::detail

// The HTML view: one self-contained file a maintainer opens in a browser. Inline CSS and
// inline SVG only: no scripts, no fonts, no images, no network. Every string from the
// bundle is escaped, so a bundle someone sent you cannot inject markup.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "report/document.hpp"
#include "report/format.hpp"
#include "util/files.hpp"

namespace ks::report {
namespace detail {

// Markup escaped, and control characters (ESC, BEL, CR; bidi overrides) made spaces: a
// bundle's text is someone else's, and a saved page is also read with `less` and `grep`.
std::string html_escape(std::string_view raw) {
  const std::string text = printable_lines(raw);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace detail
namespace {

using detail::Align;
using detail::Block;
using detail::html_escape;

constexpr const char* kStyle = R"css(
:root {
  --fg: #1d2430; --muted: #5b6576; --line: #e3e7ee; --bg: #f3f5f8; --card: #ffffff;
  --good: #1f8a4c; --bad: #c0392b; --warn: #b7791f; --invalid: #7b2d8b; --neutral: #6b7280;
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", "Liberation Sans", sans-serif; }
.ks-report { max-width: 1100px; margin: 0 auto; padding: 28px 24px 40px; }
.ks-header { display: flex; justify-content: space-between; align-items: center; gap: 16px;
  margin-bottom: 8px; }
.ks-kicker { margin: 0; text-transform: uppercase; letter-spacing: .08em; font-size: 12px;
  color: var(--muted); font-weight: 600; }
h1 { margin: 2px 0 0; font-size: 26px; line-height: 1.25; overflow-wrap: anywhere; }
h2 { font-size: 18px; margin: 0 0 12px; }
.ks-badge { font-weight: 700; letter-spacing: .05em; padding: 8px 18px; border-radius: 999px;
  color: #fff; background: var(--neutral); white-space: nowrap; font-size: 15px; }
.ks-badge.ks-v-improvement { background: var(--good); }
.ks-badge.ks-v-regression { background: var(--bad); }
.ks-badge.ks-v-invalid { background: var(--invalid); }
.ks-badge.ks-v-inconclusive { background: var(--warn); }
section.ks-section { background: var(--card); border: 1px solid var(--line); border-radius: 10px;
  padding: 18px 22px; margin: 16px 0; box-shadow: 0 1px 2px rgba(16, 24, 40, .05); }
dl.ks-facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 18px; margin: 0; }
dl.ks-facts dt { color: var(--muted); font-weight: 600; }
dl.ks-facts dd { margin: 0; overflow-wrap: anywhere; white-space: pre-line; }
p { margin: 8px 0; }
.ks-description { color: var(--muted); }
.ks-figure { margin: 0 0 22px; }
.ks-figure:last-child { margin-bottom: 0; }
.ks-figure figcaption { font-weight: 600; margin-bottom: 4px; }
svg.ks-plot { width: 100%; height: auto; display: block; font-family: inherit; }
svg.ks-bar { margin-left: .5em; vertical-align: middle; }
svg.ks-bar line { stroke: #8a94a6; stroke-width: 1; }
svg.ks-bar .ks-bar-more { fill: #c0392b; }
svg.ks-bar .ks-bar-less { fill: #2e8b57; }
svg .ks-grid { stroke: #e6e9ef; stroke-width: 1; }
svg .ks-axis { stroke: #8a94a6; stroke-width: 1; }
svg .ks-tick, svg .ks-legend, svg .ks-best-label, svg .ks-block-label { font-size: 12px; fill: #5b6576; }
svg .ks-block { stroke: #9aa3b2; stroke-width: 1; }
svg .ks-point-label { font-size: 12px; font-weight: 600; fill: #1d2430; }
svg .ks-arm-label { font-size: 12px; font-weight: 600; }
svg .ks-axis-label { font-size: 13px; fill: #1d2430; }
svg .ks-best { stroke-width: 3; stroke-linecap: round; }
svg .ks-midpoint { stroke: #1d2430; stroke-opacity: .55; stroke-width: 1.2; stroke-dasharray: 6 4; }
svg .ks-round { stroke-width: 1.2; fill-opacity: .8; }
svg .ks-error { stroke: #c0392b; stroke-width: 2; }
svg .ks-failed-round, svg .ks-failed-point { fill: #c0392b; font-weight: 700; }
svg .ks-dropped-point { fill: #8a5a00; font-size: 12px; font-weight: 700; }
.ks-table-wrap { overflow-x: auto; margin: 8px 0 14px; }
table.ks-table { border-collapse: collapse; font-size: 14px; }
table.ks-table th, table.ks-table td { padding: 6px 12px; border-bottom: 1px solid var(--line);
  text-align: left; white-space: nowrap; }
table.ks-table th { font-size: 12px; text-transform: uppercase; letter-spacing: .04em;
  color: var(--muted); background: #f8f9fb; }
table.ks-table td.ks-wide { white-space: normal; min-width: 16em; }
table.ks-table .num { text-align: right; font-variant-numeric: tabular-nums;
  font-family: ui-monospace, "DejaVu Sans Mono", "Liberation Mono", monospace; }
table.ks-table tbody tr:nth-child(even) { background: #fafbfc; }
table.ks-sandwich td:last-child { font-weight: 700; }
.ks-pill { display: inline-block; padding: 0 9px; border-radius: 999px; font-size: 12px;
  font-weight: 700; }
.ks-pass { background: #e3f4ea; color: var(--good); }
.ks-fail { background: #fbe6e4; color: var(--bad); }
.ks-neutral { background: #eef1f5; color: var(--muted); }
p.ks-verdict { border-left: 4px solid #9aa3b2; padding: 7px 12px; background: #f7f8fa;
  border-radius: 0 6px 6px 0; margin: 10px 0 4px; font-weight: 600; }
p.ks-verdict.ks-v-improvement { border-color: var(--good); }
p.ks-verdict.ks-v-regression { border-color: var(--bad); }
p.ks-verdict.ks-v-invalid { border-color: var(--invalid); }
p.ks-verdict.ks-v-inconclusive { border-color: var(--warn); }
p.ks-inference { color: var(--muted); font-size: 13px; margin: 2px 0 10px 16px; }
.ks-bad { color: var(--bad); font-weight: 600; }
p.ks-gate-failed, p.ks-failure { color: var(--bad); }
pre { background: #111827; color: #e5e7eb; padding: 12px 14px; border-radius: 8px; overflow-x: auto;
  font: 13px/1.45 ui-monospace, "DejaVu Sans Mono", "Liberation Mono", monospace; }
pre.ks-reply { background: #f8fafc; color: var(--fg); border: 1px solid var(--line); }
section.ks-overall-section { display: flex; align-items: center; gap: 12px; }
p.ks-overall { font-size: 18px; font-weight: 700; margin: 0; }
p.ks-overall.ks-v-improvement { color: var(--good); }
p.ks-overall.ks-v-regression { color: var(--bad); }
p.ks-overall.ks-v-invalid { color: var(--invalid); }
p.ks-overall.ks-v-inconclusive { color: var(--warn); }
p.ks-plot-note { margin: 2px 0 0 88px; font-size: 14px; font-weight: 600; color: var(--muted); }
p.ks-plot-note.ks-v-improvement { color: var(--good); }
p.ks-plot-note.ks-v-regression { color: var(--bad); }
p.ks-plot-note.ks-v-invalid { color: var(--invalid); }
footer { color: var(--muted); font-size: 12px; text-align: center; margin-top: 18px; }
)css";

// ks-v-regression etc., from the verdict word a verdict line carries.
std::string verdict_class(const std::string& text) {
  for (const char* v : evidence::kVerdicts)
    if (text.find(std::string(", ") + v) != std::string::npos ||
        text.find(std::string(": ") + v) != std::string::npos)
      return std::string(" ks-v-") + lower(v);
  return "";
}

std::string slug(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(c));
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return "ks-" + out;
}

std::string cell_html(const detail::Cell& cell) {
  static const std::vector<std::string> pass = {"PASS", "hit", "ok"};
  static const std::vector<std::string> fail = {"FAIL", "NOT HIT", "failed"};
  static const std::vector<std::string> neutral = {"DIFFERS", "not hit", "not traceable",
                                                   "not in the filter"};
  std::string text = html_escape(cell.text);
  auto is = [&](auto& list) {
    return std::find(list.begin(), list.end(), cell.text) != list.end();
  };
  if (is(pass))
    text = "<span class=\"ks-pill ks-pass\">" + text + "</span>";
  else if (is(fail))
    text = "<span class=\"ks-pill ks-fail\">" + text + "</span>";
  else if (is(neutral))
    text = "<span class=\"ks-pill ks-neutral\">" + text + "</span>";
  if (!cell.full.empty())
    text = "<span title=\"" + html_escape(cell.full) + "\">" + text + "</span>";
  return text;
}

std::string table_html(const Block& block) {
  const auto& t = block.table;
  std::string out =
      "<div class=\"ks-table-wrap\"><table class=\"ks-table " + html_escape(block.cls) + "\"";
  if (!block.text.empty()) out += " data-workload=\"" + html_escape(block.text) + "\"";
  out += ">\n<thead><tr>";
  for (auto& c : t.columns)
    out += std::string(c.align == Align::right ? "<th class=\"num\">" : "<th>") +
           html_escape(c.title) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  std::vector<double> largest(t.columns.size(), 0);  // per column, the largest |bar|
  for (auto& row : t.rows)
    for (size_t c = 0; c < row.size() && c < largest.size(); ++c)
      if (row[c].bar && std::isfinite(*row[c].bar)) largest[c] = std::max(largest[c], std::abs(*row[c].bar));
  for (auto& row : t.rows) {
    out += "<tr>";
    for (size_t c = 0; c < t.columns.size(); ++c) {
      const detail::Cell cell = c < row.size() ? row[c] : detail::Cell();
      bool wide = cell.text.size() > 60;
      std::string cls = t.columns[c].align == Align::right ? "num" : (wide ? "ks-wide" : "");
      out += (cls.empty() ? "<td>" : "<td class=\"" + cls + "\">") + cell_html(cell);
      if (cell.bar && std::isfinite(*cell.bar) && largest[c] > 0) {
        // Half the width each way from the middle line.
        const double half = 50 * std::abs(*cell.bar) / largest[c];
        out += fmt::format(
            "<svg class=\"ks-bar\" viewBox=\"0 0 100 10\" width=\"100\" height=\"10\" role=\"img\" "
            "aria-label=\"{}\"><line x1=\"50\" y1=\"0\" x2=\"50\" y2=\"10\"/><rect class=\"{}\" x=\"{:.1f}\" "
            "y=\"1\" width=\"{:.1f}\" height=\"8\"/></svg>",
            html_escape(cell.text), *cell.bar > 0 ? "ks-bar-more" : "ks-bar-less", *cell.bar > 0 ? 50.0 : 50 - half,
            half);
      }
      out += "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</tbody></table></div>\n";
}

}  // namespace

std::string html(const evidence::Bundle& bundle, const Options& options) {
  auto doc = detail::build_document(bundle, options);
  std::string name =
      bundle.experiment_name.empty() ? "(unnamed experiment)" : bundle.experiment_name;
  std::string verdict_cls = "ks-v-" + lower(doc.verdict);

  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>" + html_escape(doc.title) + "</title>\n<style>" + kStyle + "</style>\n";
  out += "</head>\n<body>\n<main class=\"ks-report\">\n";
  out +=
      "<header class=\"ks-header\">\n<div><p class=\"ks-kicker\">ksandwich report</p>"
      "<h1 class=\"ks-title\">" +
      html_escape(name) + "</h1></div>\n";
  out += "<div class=\"ks-badge " + html_escape(verdict_cls) + "\">" + html_escape(doc.verdict) +
         "</div>\n</header>\n";

  // Blocks before the first heading are the setup and the plots; each heading opens a card.
  bool open = false;
  std::string current;  // "setup" | "plots" | heading slug
  auto open_section = [&](const std::string& key, const std::string& title,
                          const std::string& cls = "") {
    if (open) out += "</section>\n";
    out += "<section class=\"ks-section" + (cls.empty() ? "" : " " + cls) + "\" id=\"" +
           html_escape(key) + "\">\n" +
           (title.empty() ? "" : "<h2>" + html_escape(title) + "</h2>\n");
    open = true;
    current = key;
  };
  bool seen_heading = false;
  for (size_t i = 0; i < doc.blocks.size(); ++i) {
    const Block& block = doc.blocks[i];
    if (!seen_heading && block.kind != Block::Kind::heading) {
      if (block.kind == Block::Kind::plot && current != "ks-plots")
        open_section("ks-plots", "Every round, in run order", "ks-plots");
      else if (block.kind != Block::Kind::plot && current != "ks-setup")
        open_section("ks-setup", "Setup");
    }
    switch (block.kind) {
      case Block::Kind::heading:
        seen_heading = true;
        open_section(slug(block.text), block.text);
        break;
      case Block::Kind::paragraph: {
        std::string cls = block.cls;
        if (cls == "ks-overall") open_section("ks-verdict-section", "", "ks-overall-section");
        if (cls == "ks-verdict" || cls == "ks-overall") cls += verdict_class(block.text);
        std::string text = block.text.rfind("- ", 0) == 0 ? block.text.substr(2) : block.text;
        out += "<p class=\"" + html_escape(cls) + "\">" + html_escape(text) + "</p>\n";
        break;
      }
      case Block::Kind::facts:
        // Consecutive facts (the header and its detail) share one grid, so keys align.
        out += "<dl class=\"" + html_escape(block.cls) + "\">\n";
        for (;; ++i) {
          for (auto& [key, value] : doc.blocks[i].facts)
            out += "<dt>" + html_escape(key) + "</dt><dd>" + html_escape(value) + "</dd>\n";
          if (i + 1 == doc.blocks.size() || doc.blocks[i + 1].kind != Block::Kind::facts) break;
        }
        out += "</dl>\n";
        break;
      case Block::Kind::table:
        out += table_html(block);
        break;
      case Block::Kind::preformatted:
        out +=
            "<pre class=\"" + html_escape(block.cls) + "\">" + html_escape(block.text) + "</pre>\n";
        break;
      case Block::Kind::plot:
        out += "<figure class=\"ks-figure\">\n<figcaption>" + html_escape(block.caption) +
               "</figcaption>\n" + detail::svg_plot(bundle, block.text);
        if (!block.note.empty())
          out += "<p class=\"ks-plot-note" + verdict_class(block.note) + "\">" +
                 html_escape(block.note) + "</p>\n";
        out += "</figure>\n";
        break;
    }
  }
  if (open) out += "</section>\n";
  out += "<footer>Generated by ksandwich from bundle.json";
  if (!bundle.created_at.empty()) out += " (created " + html_escape(bundle.created_at) + ")";
  out += ".</footer>\n</main>\n</body>\n</html>\n";
  return out;
}

}  // namespace ks::report

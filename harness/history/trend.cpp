#include "history/trend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "proc/runner.hpp"
#include "report/document.hpp"
#include "report/format.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::history {
namespace {

using report::detail::html_escape;
using report::detail::markdown_escape;

std::string pct(double ratio) { return fmt::format("{:+.2f}%", 100 * (ratio - 1)); }

std::string change_line(const Change& c) {
  return fmt::format("change point at night {} ({}): {} -> {} ({}); between {}", c.night + 1,
                     c.first_after.time, pct(c.ratio_before), pct(c.ratio_after), report::detail::p_value(c.p_value),
                     commit_range(c.last_before, c.first_after));
}

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

Table night_table(const WorkloadTrend& t) {
  Table table{{"night", "time", "tip", "tip / baseline", "interval", "verdict", "change"}, {}};
  for (size_t i = 0; i < t.nights.size(); ++i) {
    auto& n = t.nights[i];
    bool change = std::any_of(t.changes.begin(), t.changes.end(), [&](auto& c) { return c.night == i; });
    const auto tip = bounded_identity(n.tip);  // a history written before it was bounded
    table.rows.push_back({std::to_string(i + 1), n.time.substr(0, 40), tip, pct(n.ratio),
                          fmt::format("[{}, {}] ({:.1f}%)", pct(n.low), pct(n.high), 100 * n.level), n.verdict,
                          change ? "<- change" : ""});
  }
  return table;
}

std::string text_table(const Table& t) {
  std::vector<size_t> width(t.header.size());
  for (size_t c = 0; c < t.header.size(); ++c) {
    width[c] = t.header[c].size();
    for (auto& r : t.rows) width[c] = std::max(width[c], r[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < cells.size(); ++c) out += fmt::format("{:<{}}  ", cells[c], width[c]);
    return trim(out) + "\n";
  };
  std::string out = line(t.header);
  for (auto& r : t.rows) out += line(r);
  return out;
}

// Every cell escaped: a kernel release or tip from a bundle holding "|" or "<img" would add
// cells or markup.
std::string markdown_table(const Table& t) {
  auto row = [](const std::vector<std::string>& cells) {
    std::string out = "|";
    for (auto& cell : cells) out += " " + markdown_escape(cell) + " |";
    return out + "\n";
  };
  std::string out = row(t.header) + "|";
  for (size_t c = 0; c < t.header.size(); ++c) out += " --- |";
  out += "\n";
  for (auto& r : t.rows) out += row(r);
  return out;
}

std::string html_table(const Table& t) {
  std::string out = "<table class=\"ks-trend\">\n<tr>";
  for (auto& h : t.header) out += "<th>" + html_escape(h) + "</th>";
  out += "</tr>\n";
  for (auto& r : t.rows) {
    out += "<tr>";
    for (auto& cell : r) out += "<td>" + html_escape(cell) + "</td>";
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

// Nights along x, tip / baseline in % along y: each night's interval as a bar and its ratio
// as a dot, no change as a line at 0%, each change point as a dashed line between the nights
// it separates, and each segment's mean as a horizontal line.
std::string svg(const WorkloadTrend& t) {
  constexpr double kWidth = 960, kHeight = 360, kLeft = 72, kRight = 24, kTop = 40, kBottom = 48;
  double lo = 0, hi = 0;
  for (auto& n : t.nights) lo = std::min(lo, 100 * (n.low - 1)), hi = std::max(hi, 100 * (n.high - 1));
  if (hi - lo < 1e-9) lo -= 1, hi += 1;
  double step = report::detail::nice_step(hi - lo);
  double y0 = std::floor(lo / step) * step, y1 = std::ceil(hi / step) * step;
  double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  size_t n = std::max<size_t>(t.nights.size(), 1);
  auto x_at = [&](double i) { return kLeft + (i + 0.5) * plot_w / static_cast<double>(n); };
  auto y_at = [&](double v) { return kTop + plot_h - (v - y0) / (y1 - y0) * plot_h; };
  std::string out = fmt::format(
      "<svg class=\"ks-trend-plot\" data-workload=\"{0}\" viewBox=\"0 0 {1} {2}\" width=\"{1}\" height=\"{2}\" "
      "role=\"img\" aria-label=\"{0}: tip / baseline by night\">\n"
      "<text x=\"{3}\" y=\"24\" font-size=\"14\">{0}: tip / baseline, % ({4})</text>\n",
      html_escape(t.workload), kWidth, kHeight, kLeft, html_escape(t.metric));
  int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step))));
  for (double v = y0; v <= y1 + step / 2; v += step)
    out += fmt::format(
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" font-size=\"11\" text-anchor=\"end\">{5:+.{6}f}%</text>\n",
        kLeft, kWidth - kRight, y_at(v), kLeft - 6, y_at(v) + 4, v, decimals);
  if (y0 <= 0 && y1 >= 0)
    out += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#555\"/>\n", kLeft,
                       kWidth - kRight, y_at(0));
  size_t begin = 0;
  auto segment = [&](size_t from, size_t to, double ratio) {
    out += fmt::format(
        "<line class=\"ks-trend-segment\" x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" "
        "stroke=\"#3a9a5b\" stroke-width=\"2\"/>\n",
        x_at(from - 0.4), x_at(to - 0.6), y_at(100 * (ratio - 1)));
  };
  for (auto& c : t.changes) {
    segment(begin, c.night, c.ratio_before);
    double x = x_at(c.night - 0.5);
    out += fmt::format(
        "<line class=\"ks-change-point\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#b8463f\" "
        "stroke-dasharray=\"6 4\"/>\n",
        x, kTop, kTop + plot_h);
    begin = c.night;
  }
  if (!t.changes.empty()) segment(begin, t.nights.size(), t.changes.back().ratio_after);
  for (size_t i = 0; i < t.nights.size(); ++i) {
    auto& night = t.nights[i];
    double x = x_at(static_cast<double>(i));
    out += fmt::format(
        "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\" stroke=\"#2f6db5\"/>"
        "<circle class=\"ks-night\" cx=\"{0:.1f}\" cy=\"{3:.1f}\" r=\"4\" fill=\"#e0692a\">"
        "<title>night {4} ({5}): {6} [{7}, {8}]</title></circle>\n",
        x, y_at(100 * (night.low - 1)), y_at(100 * (night.high - 1)), y_at(100 * (night.ratio - 1)), i + 1,
        html_escape(night.time), pct(night.ratio), pct(night.low), pct(night.high));
    if (t.nights.size() <= 40 || i % 5 == 0)
      out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\n", x,
                         kHeight - kBottom + 18, i + 1);
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">night</text>\n",
                     kLeft + plot_w / 2, kHeight - 8);
  return out + "</svg>\n";
}

constexpr const char* kMethod =
    "Change points: E-divisive means on the nights' log ratios (energy distance, exponent 1) "
    "proposes each split; Student's t test of the two sides accepts it at alpha 0.01, its p "
    "multiplied by the number of candidate splits, when it rests on two nights or more a side "
    "(two nearer their side's mean, and significant with the wildest night left out) and the "
    "ratio moves by at least the material threshold (--material-pct, 1% unless given).";

}  // namespace

std::string commit_range(const Night& a, const Night& b) {
  const std::string prefix = "commit ";
  auto commit = [&](const std::string& s) { return split(s.substr(prefix.size()), ' ').front(); };
  // A command only for commit ids: a tip comes from a bundle, and what is printed gets pasted.
  auto is_id = [](const std::string& id) {
    return !id.empty() && std::all_of(id.begin(), id.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
  };
  if (starts_with(a.tip, prefix) && starts_with(b.tip, prefix) && is_id(commit(a.tip)) && is_id(commit(b.tip)))
    return "git log " + commit(a.tip) + ".." + commit(b.tip);
  return one_line(a.tip) + " -> " + one_line(b.tip);
}

std::vector<Change> changes_of(const std::vector<Night>& nights, double material_pct) {
  stats::ChangePointOptions options;
  options.min_difference = std::log1p(material_pct / 100);
  std::vector<double> logs;
  for (auto& n : nights) logs.push_back(std::log(n.ratio));
  std::vector<Change> out;
  for (auto& cp : stats::e_divisive_means(logs, options))
    out.push_back({cp.index, cp.p_value, std::exp(cp.mean_before), std::exp(cp.mean_after), nights[cp.index - 1],
                   nights[cp.index]});
  return out;
}

std::vector<WorkloadTrend> trend_of(Store& store, const std::string& experiment, double material_pct, size_t max_nights) {
  std::map<std::pair<std::string, std::string>, WorkloadTrend> by_workload;
  for (auto& run : store.runs(experiment))
    for (auto& w : store.workloads(run.id)) {
      if (!w.ratio || !w.ratio_low || !w.ratio_high || *w.ratio <= 0) continue;
      auto& t = by_workload[{run.experiment, w.workload}];
      // One line each: the fields come from bundles, and a newline in one would forge a row.
      t.experiment = one_line(run.experiment), t.workload = one_line(w.workload), t.metric = one_line(w.metric);
      t.nights.push_back({run.id, one_line(run.created_at), one_line(run.control_source), one_line(run.patched_source),
                          one_line(w.verdict), *w.ratio, *w.ratio_low, *w.ratio_high, w.level.value_or(0.95)});
    }
  std::vector<WorkloadTrend> out;
  for (auto& [key, t] : by_workload) {
    proc::throw_if_interrupted();
    if (t.nights.size() > max_nights) {
      t.earlier = t.nights.size() - max_nights;
      t.nights.erase(t.nights.begin(), t.nights.begin() + static_cast<long>(t.earlier));
    }
    t.changes = changes_of(t.nights, material_pct);
    out.push_back(std::move(t));
  }
  return out;
}

std::string render_trend(const std::vector<WorkloadTrend>& trend, const std::string& format) {
  if (format == "json") return nlohmann::json(trend).dump(2) + "\n";
  if (format != "text" && format != "markdown" && format != "html")
    throw UserError("unknown trend format '" + format + "'", "use text, markdown, html or json");
  std::string out;
  if (format == "html")
    out += "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ksandwich trend</title>"
           "<style>body{font-family:sans-serif} table{border-collapse:collapse} td,th{border:1px solid #ccc;"
           "padding:2px 6px}</style></head><body>\n";
  if (trend.empty()) out += format == "html" ? "<p>The history holds no night with a ratio.</p>\n"
                                             : "The history holds no night with a ratio.\n";
  for (auto& t : trend) {
    auto table = night_table(t);
    std::string title = fmt::format("{}: {} ({} nights{})", t.experiment, t.workload, t.nights.size(),
                                    t.earlier ? fmt::format("; {} earlier ones left out", t.earlier) : "");
    std::vector<std::string> lines;
    for (auto& c : t.changes) lines.push_back(change_line(c));
    if (lines.empty()) lines.push_back("no change point");
    if (format == "text") {
      out += title + "\n\n" + text_table(table) + "\n";
      for (auto& l : lines) out += l + "\n";
      out += "\n";
    } else if (format == "markdown") {
      out += "## " + markdown_escape(title) + "\n\n" + markdown_table(table) + "\n";
      for (auto& l : lines) out += "- " + markdown_escape(l) + "\n";
      out += "\n";
    } else {
      out += "<h2>" + html_escape(title) + "</h2>\n" + svg(t) + html_table(table) + "<ul>\n";
      for (auto& l : lines) out += "<li class=\"ks-change\">" + html_escape(l) + "</li>\n";
      out += "</ul>\n";
    }
  }
  out += format == "html" ? std::string("<p>") + kMethod + "</p>\n</body></html>\n" : std::string(kMethod) + "\n";
  return printable_lines(out);  // names and commits come from bundles: nothing that moves a terminal's cursor
}

}  // namespace ks::history

// The SVG plot of one workload: every round of every point in run order, arms coloured,
// each point's best round (the value its verdict reads) as a horizontal segment, and the
// points of a block the analysis left out marked with its reason. Inline SVG, no scripts,
// no external anything.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "report/document.hpp"
#include "report/format.hpp"
#include "util/files.hpp"

namespace ks::report::detail {
namespace {

using evidence::Bundle;
using evidence::Row;

constexpr double kWidth = 960, kHeight = 420;
constexpr double kLeft = 88, kRight = 24, kTop = 56, kBottom = 92;
constexpr double kGapSlots = 2.5;  // empty round-slots between two points

struct PlotPoint {
  int id = 0;
  std::string arm;
  std::string status;
  std::vector<const Row*> rows;
  std::optional<double> best;  // the best measured round, in the bundle's unit
  std::string dropped;         // why the analysis left its block out, else empty
};

std::string colour(const std::string& arm, const std::string& control, const std::string& patched) {
  if (arm == control) return "#2f6db5";
  if (arm == patched) return "#e0692a";
  static const char* others[] = {"#3a9a5b", "#8a5cc2", "#b8463f", "#7d7d7d"};
  unsigned sum = 0;  // a stable colour per arm name, the same in every report
  for (unsigned char c : arm) sum += c;
  return others[sum % 4];
}

}  // namespace

double nice_step(double range) {
  double raw = range / 5;
  double magnitude = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * magnitude) return m * magnitude;
  return 10 * magnitude;
}

namespace {

// Thousands separators keep large IOPS figures readable: "41,250.0".
std::string number(double v, int decimals) {
  std::string digits = fmt::format("{:.{}f}", std::fabs(v), decimals);
  size_t dot = std::min(digits.find('.'), digits.size());
  std::string out = v < 0 ? "-" : "";
  for (size_t i = 0; i < dot; ++i) {
    if (i > 0 && (dot - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out + digits.substr(dot);
}

}  // namespace

std::string svg_plot(const Bundle& bundle, const std::string& workload) {
  // What was measured, and in which unit.
  const evidence::WorkloadAnalysis* analysis = nullptr;
  if (bundle.analysis)
    for (auto& w : bundle.analysis->workloads)
      if (w.workload == workload) analysis = &w;
  std::string metric = analysis ? analysis->metric : "";
  if (metric.empty())
    for (auto& r : bundle.rows)
      if (r.workload == workload && metric.empty())
        for (const char* m : evidence::kMetrics)
          if (metric.empty() && r.metric(m)) metric = m;
  Unit unit = unit_for(metric, evidence::bundle_clock(bundle));

  std::string control = "control", patched = "patched";
  if (bundle.plan.is_object()) {
    if (auto c = first_of(bundle.plan, {"control_arm"}); !c.empty()) control = c;
    if (auto p = first_of(bundle.plan, {"patched_arm"}); !p.empty()) patched = p;
  }

  // Points in run order, with their rounds of this workload.
  std::vector<PlotPoint> points;
  for (auto& p : bundle.points) points.push_back({p.id, p.arm, p.status, {}, std::nullopt, ""});
  for (auto& r : bundle.rows) {
    if (r.workload != workload) continue;
    auto it = std::find_if(points.begin(), points.end(), [&](auto& p) { return p.id == r.point; });
    if (it == points.end()) {
      points.push_back({r.point, r.arm, "ok", {}, std::nullopt, ""});
      it = points.end() - 1;
    }
    it->rows.push_back(&r);
  }
  std::sort(points.begin(), points.end(), [](auto& a, auto& b) { return a.id < b.id; });
  for (auto& p : points) {
    std::stable_sort(p.rows.begin(), p.rows.end(),
                     [](const Row* a, const Row* b) { return a->round < b->round; });
    if (analysis)
      for (auto& s : analysis->points)
        if (s.point == p.id && s.n > 0) p.best = unit.higher_is_better ? s.max : s.min;
    if (!p.best)  // no analysis yet: the best of the measured rounds
      for (auto* r : p.rows)
        if (auto v = r->metric(metric); v && !r->warmup && r->error.empty())
          p.best = !p.best ? *v : unit.higher_is_better ? std::max(*p.best, *v) : std::min(*p.best, *v);
    auto point = std::find_if(bundle.points.begin(), bundle.points.end(), [&](auto& b) { return b.id == p.id; });
    if (analysis && point != bundle.points.end())
      for (auto& d : analysis->blocks_dropped)
        if (d.block == point->block) p.dropped = d.reason;
  }
  // A screen's reference: the control points' best rounds, geometric mean (what the
  // patched point's best is judged against).
  std::optional<double> midpoint;
  std::vector<double> control_best;
  for (auto& p : points)
    if (p.arm == control && p.best && *p.best > 0) control_best.push_back(*p.best);
  if (analysis && points.size() == 3 && control_best.size() == 2)
    midpoint = std::sqrt(control_best[0] * control_best[1]);

  // Scales.
  double lo = INFINITY, hi = -INFINITY;
  auto extend = [&](double v) {
    lo = std::min(lo, v * unit.scale);
    hi = std::max(hi, v * unit.scale);
  };
  bool any_warmup = false;
  for (auto& p : points) {
    for (auto* r : p.rows) {
      if (auto v = r->metric(metric)) extend(*v);
      any_warmup = any_warmup || r->warmup;
    }
    if (p.best) extend(*p.best);
  }
  if (midpoint) extend(*midpoint);
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  if (hi - lo < 1e-9 * std::max(1.0, std::fabs(hi))) {
    double pad = std::max(std::fabs(hi) * 0.01, 1e-6);
    lo -= pad, hi += pad;
  }
  double step = nice_step(hi - lo);
  double y0 = std::floor(lo / step) * step, y1 = std::ceil(hi / step) * step;
  // Room above the highest dot and below the lowest, without going below zero for
  // metrics that cannot.
  if (y1 - hi < step * 0.15) y1 += step;
  if (lo - y0 < step * 0.15 && (y0 - step >= 0 || lo < 0)) y0 -= step;
  int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step))));

  double slots = 0;
  std::vector<double> offsets;
  for (size_t i = 0; i < points.size(); ++i) {
    if (i) slots += kGapSlots;
    offsets.push_back(slots);
    slots += std::max<size_t>(points[i].rows.size(), 3);
  }
  slots = std::max(slots, 1.0);
  double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  double slot = plot_w / slots;
  auto x_at = [&](double s) { return kLeft + s * slot; };
  auto y_at = [&](double v) { return kTop + plot_h - (v - y0) / (y1 - y0) * plot_h; };

  std::string label = workload + ", " + unit.name + " (" + unit.better() + ")";
  std::string out = fmt::format(
      "<svg class=\"ks-plot\" data-workload=\"{}\" viewBox=\"0 0 {} {}\" width=\"{}\" "
      "height=\"{}\" role=\"img\" aria-label=\"{}\">\n",
      html_escape(workload), kWidth, kHeight, kWidth, kHeight,
      html_escape(workload + ": every round of every point in run order"));
  out +=
      "<title>" + html_escape(label + ": every round of every point in run order") + "</title>\n";

  // Point bands, behind everything else.
  for (size_t i = 0; i < points.size(); ++i) {
    double width = std::max<size_t>(points[i].rows.size(), 3);
    out += fmt::format(
        "<rect class=\"ks-band\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
        "fill=\"{}\" fill-opacity=\"0.08\"/>\n",
        x_at(offsets[i]), kTop, width * slot, plot_h, colour(points[i].arm, control, patched));
  }

  // Grid and y axis: counted, not stepped to y1 (thirty-second attack: a time per op of
  // 1.7e308 made y1 infinite and this loop endless, growing the page until memory ran out).
  const double span = (y1 - y0) / step;
  const int ticks = std::isfinite(span) ? static_cast<int>(std::min(std::round(span), 50.0)) : 0;
  for (int i = 0; i <= ticks; ++i) {
    const double v = y0 + i * step;
    double y = y_at(v);
    out += fmt::format(
        "<line class=\"ks-grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n"
        "<text class=\"ks-tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
        kLeft, y, kWidth - kRight, y, kLeft - 8, y + 4, number(v, decimals));
  }
  out += fmt::format(
      "<line class=\"ks-axis\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>\n"
      "<line class=\"ks-axis\" x1=\"{0:.1f}\" y1=\"{2:.1f}\" x2=\"{3:.1f}\" y2=\"{2:.1f}\"/>\n",
      kLeft, kTop, kTop + plot_h, kWidth - kRight);
  out += fmt::format(
      "<text class=\"ks-axis-label\" transform=\"translate(20 {:.1f}) rotate(-90)\" "
      "text-anchor=\"middle\">{}</text>\n",
      kTop + plot_h / 2, html_escape(unit.name + " (" + unit.better() + ")"));
  out += fmt::format(
      "<text class=\"ks-axis-label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">"
      "points in run order, one dot per round</text>\n",
      kLeft + plot_w / 2, kHeight - 12);

  // Control midpoint (screen), dashed across the plot.
  if (midpoint) {
    double y = y_at(*midpoint * unit.scale);
    out += fmt::format(
        "<line class=\"ks-midpoint\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\">"
        "<title>{} midpoint of the best rounds: {} {}</title></line>\n",
        kLeft, y, kWidth - kRight, y, html_escape(control), number(*midpoint * unit.scale, 3),
        html_escape(unit.name));
  }

  // Confirm runs: which points form a block, labelled under the arm labels.
  std::map<int, std::pair<double, double>> blocks;  // block -> x range
  for (size_t i = 0; i < points.size(); ++i) {
    auto it = std::find_if(bundle.points.begin(), bundle.points.end(),
                           [&](auto& p) { return p.id == points[i].id; });
    if (it == bundle.points.end()) continue;
    double x0 = x_at(offsets[i]),
           x1 = x_at(offsets[i] + std::max<size_t>(points[i].rows.size(), 3));
    auto [entry, fresh] = blocks.try_emplace(it->block, x0, x1);
    if (!fresh)
      entry->second = {std::min(entry->second.first, x0), std::max(entry->second.second, x1)};
  }
  bool show_blocks = blocks.size() > 1;

  // Rounds, best rounds and labels per point.
  for (size_t i = 0; i < points.size(); ++i) {
    auto& p = points[i];
    std::string fill = colour(p.arm, control, patched);
    double band = std::max<size_t>(p.rows.size(), 3);
    double r = std::clamp(slot * 0.42, 1.6, 4.0);
    for (size_t k = 0; k < p.rows.size(); ++k) {
      const Row& row = *p.rows[k];
      double x = x_at(offsets[i] + k + 0.5);
      auto v = row.metric(metric);
      std::string tip = fmt::format("point {} ({}) round {}{}: ", p.id, p.arm, row.round,
                                    row.warmup ? " (warm-up)" : "");
      if (!v) {
        out += fmt::format(
            "<text class=\"ks-failed-round\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">"
            "&#215;<title>{}</title></text>\n",
            x, kTop + plot_h - 4, html_escape(tip + (row.error.empty() ? "no value" : row.error)));
        continue;
      }
      std::string cls = row.warmup ? "ks-round ks-warmup" : "ks-round";
      if (!row.error.empty()) cls += " ks-error";
      out += fmt::format(
          "<circle class=\"{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{:.1f}\" fill=\"{}\" "
          "stroke=\"{}\"><title>{}</title></circle>\n",
          cls, x, y_at(*v * unit.scale), r, row.warmup ? "#ffffff" : fill, fill,
          html_escape(tip + number(*v * unit.scale, 3) + " " + unit.name +
                      (row.error.empty() ? "" : " (" + row.error + ")")));
    }
    double x0 = x_at(offsets[i]), x1 = x_at(offsets[i] + band), cx = (x0 + x1) / 2;
    if (p.best) {
      double y = y_at(*p.best * unit.scale);
      out += fmt::format(
          "<line class=\"ks-best\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
          "stroke=\"{}\"><title>point {} ({}) best round: {} {}{}</title></line>\n",
          x0 + slot * 0.2, y, x1 - slot * 0.2, y, fill, p.id, html_escape(p.arm),
          number(*p.best * unit.scale, 3), html_escape(unit.name), p.dropped.empty() ? "" : " (left out)");
    }
    if (!p.dropped.empty())
      out += fmt::format(
          "<text class=\"ks-dropped-point\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">"
          "left out<title>{}</title></text>\n",
          cx, kTop + 14, html_escape(one_line("point " + std::to_string(p.id) + "'s block is not in the verdict: " + p.dropped)));
    if (p.status == "failed")
      out += fmt::format(
          "<text class=\"ks-failed-point\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">"
          "failed</text>\n",
          cx, kTop + plot_h / 2);
    bool roomy = x1 - x0 >= 90 && !show_blocks;
    out += fmt::format(
        "<text class=\"ks-point-label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">"
        "{}{}</text>\n",
        cx, kTop + plot_h + 18, roomy ? "point " : "", p.id);
    out += fmt::format(
        "<text class=\"ks-arm-label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" "
        "fill=\"{}\">{}</text>\n",
        cx, kTop + plot_h + 33, fill, html_escape(p.arm));
    if (roomy && p.best)
      out += fmt::format(
          "<text class=\"ks-best-label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">"
          "best {}</text>\n",
          cx, kTop + plot_h + 48, number(*p.best * unit.scale, decimals + 1));
  }

  if (show_blocks)
    for (auto& [block, range] : blocks) {
      double y = kTop + plot_h + 42;
      out += fmt::format(
          "<line class=\"ks-block\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n"
          "<text class=\"ks-block-label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">"
          "block {}</text>\n",
          range.first + 2, y, range.second - 2, y, (range.first + range.second) / 2, y + 14, block);
    }

  // Legend, above the plot.
  double lx = kLeft;
  double ly = 26;
  auto legend_text = [&](const std::string& text) {
    out += fmt::format("<text class=\"ks-legend\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", lx,
                       ly + 4, html_escape(text));
    lx += 6.8 * text.size() + 22;
  };
  std::vector<std::string> arms;
  for (auto& p : points)
    if (std::find(arms.begin(), arms.end(), p.arm) == arms.end()) arms.push_back(p.arm);
  for (auto& arm : arms) {
    out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4.5\" fill=\"{}\"/>\n", lx + 5, ly,
                       colour(arm, control, patched));
    lx += 15;
    legend_text(arm);
  }
  out += fmt::format(
      "<line class=\"ks-best\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
      "stroke=\"#444\"/>\n",
      lx, ly, lx + 22, ly);
  lx += 28;
  legend_text("best round (the verdict's)");
  if (midpoint) {
    out += fmt::format(
        "<line class=\"ks-midpoint\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n",
        lx, ly, lx + 22, ly);
    lx += 28;
    legend_text(control + " midpoint");
  }
  if (any_warmup) {
    out += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"#ffffff\" stroke=\"#444\"/>\n", lx + 5,
        ly);
    lx += 15;
    legend_text("warm-up round (not counted)");
  }
  out += "</svg>\n";
  return out;
}

}  // namespace ks::report::detail

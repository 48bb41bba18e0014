// What every view of a bundle says, in the order a maintainer reads it: what was run and
// where, the sandwich table, drift, semantic checks, verdicts, then the evidence that the
// comparison was fair (gates, failed points, build audit, direct hits, kernel health),
// the verdict, and a reply block ready to paste. Renders defensively: any key may be absent.
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

bool is_timing_row(const evidence::Row& r) { return !r.warmup; }

std::string row_problem(const evidence::Row& r) {
  std::vector<std::string> problems;
  if (!r.error.empty()) problems.push_back("error: " + r.error);
  if (r.expected_match_ratio < 100.0 - 1e-9)
    problems.push_back(fmt::format("expected_match_ratio={}", r.expected_match_ratio));
  if (r.unexpected_results > 0)
    problems.push_back(fmt::format("unexpected_results={}", r.unexpected_results));
  std::string out;
  for (auto& p : problems) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string size_phrase(uint64_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= 1024 && bytes % 1024 == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

Builder::Builder(const Bundle& bundle, const Options& options)
    : b_(bundle), options_(options), clock_(evidence::bundle_clock(bundle)) {
  for (auto& p : b_.points) points_.push_back(&p);
  std::stable_sort(points_.begin(), points_.end(),
                   [](const Point* x, const Point* y) { return x->id < y->id; });
  pick_arms();
}

Document Builder::build() {
  doc_.title =
      "ksandwich report: " +
      (b_.experiment_name.empty() ? std::string("(unnamed experiment)") : b_.experiment_name);
  doc_.verdict = b_.verdict;
  environment_changes();
  header();
  claim();
  nothing_measured();
  plots();
  results();
  gates();
  warnings();
  failed_points();
  audit();
  direct_hits();
  health();
  paragraph(overall_verdict(), "ks-overall");
  reply();
  return std::move(doc_);
}

void Builder::heading(std::string text) {
  Block block;
  block.kind = Block::Kind::heading;
  block.text = std::move(text);
  doc_.blocks.push_back(std::move(block));
}

Block& Builder::paragraph(std::string text, std::string cls, size_t indent) {
  Block block;
  block.kind = Block::Kind::paragraph;
  block.text = std::move(text);
  block.cls = std::move(cls);
  block.indent = indent;
  doc_.blocks.push_back(std::move(block));
  return doc_.blocks.back();
}

Block& Builder::table(Table t, std::string cls) {
  Block block;
  block.kind = Block::Kind::table;
  block.table = std::move(t);
  block.cls = std::move(cls);
  doc_.blocks.push_back(std::move(block));
  return doc_.blocks.back();
}

void Builder::preformatted(std::string text, std::string cls) {
  Block block;
  block.kind = Block::Kind::preformatted;
  block.text = std::move(text);
  block.cls = std::move(cls);
  doc_.blocks.push_back(std::move(block));
}

void Builder::pick_arms() {
  std::vector<std::string> arms;  // distinct, in run order
  for (auto* point : points_)
    if (std::find(arms.begin(), arms.end(), point->arm) == arms.end()) arms.push_back(point->arm);
  auto has = [&](const char* arm) {
    return std::find(arms.begin(), arms.end(), arm) != arms.end();
  };
  control_ = first_of(b_.plan, {"control_arm"});
  if (control_.empty()) control_ = has("control") || arms.empty() ? "control" : arms[0];
  patched_ = first_of(b_.plan, {"patched_arm"});
  if (patched_.empty()) {
    patched_ = "patched";
    if (!has("patched"))
      for (auto& arm : arms)
        if (arm != control_) patched_ = arm;
  }
}

const evidence::Point* Builder::point(int id) const {
  for (auto* p : points_)
    if (p->id == id) return p;
  return nullptr;
}

std::string Builder::point_name(int id, const std::string& arm) const {
  return fmt::format("point {} ({})", id, arm);
}

bool Builder::confirm_scheme() const {
  if (b_.analysis && b_.analysis->scheme == "confirm") return true;
  if (first_of(b_.plan, {"scheme"}) == "confirm") return true;
  return points_.size() > 3;
}

std::string Builder::scheme() const {
  std::string s = first_of(b_.plan, {"scheme"});
  if (s.empty() && b_.analysis) s = b_.analysis->scheme;
  if (s.empty()) s = first_of(b_.experiment, {"scheme"});
  return s.empty() ? "screen" : s;
}

// Distinct values of a noise control across points, in run order.
std::vector<std::string> Builder::environment_values(std::initializer_list<const char*> keys) const {
  std::vector<std::string> values;
  std::set<std::string> seen;  // a bundle may hold tens of thousands of points: no scan per point
  for (auto* p : points_) {
    std::string v = first_of(p->environment, keys);
    if (!v.empty() && seen.insert(v).second) values.push_back(v);
  }
  return values;
}

// What the points read back wins over what the host says (a guest has its own
// clocksource); a disagreement between points is shown, not hidden.
std::string Builder::noise_control(std::initializer_list<const char*> keys) const {
  auto values = environment_values(keys);
  if (values.empty()) return first_of(b_.machine, keys);
  if (values.size() == 1) return values[0];
  return join(values, "/") + " (differs between points)";
}

std::string Builder::join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

std::string Builder::workload_label(const std::string& id) const {
  auto workloads =
      b_.experiment.is_object() ? b_.experiment.find("workloads") : b_.experiment.end();
  if (!b_.experiment.is_object() || workloads == b_.experiment.end() || !workloads->is_array())
    return id;
  for (auto& w : *workloads) {
    std::string name = first_of(w, {"name"});
    std::string label = first_of(w, {"label"});
    if ((label.empty() ? name : label) != id) continue;
    bool ioctl = name == "clone" || name == "dedupe";
    if (auto range = count_of(w, "range_bytes"); ioctl && range)
      return id + " " + size_phrase(*range);
    if (ioctl) return id + " 4 KiB";  // the experiment file's default range
  }
  return id;
}

std::string Builder::order_phrase() const {
  std::vector<std::string> arms;
  for (auto* p : points_) arms.push_back(p->arm);
  if (arms.empty()) {
    auto order = b_.plan.is_object() ? b_.plan.find("order") : b_.plan.end();
    if (b_.plan.is_object() && order != b_.plan.end() && order->is_array())
      for (auto& a : *order) arms.push_back(a.is_string() ? a.get<std::string>() : scalar(a));
  }
  if (!confirm_scheme()) return join(arms, " -> ");
  // Confirm: blocks of both arms in seeded order, written compactly as CP PC ...
  std::map<std::string, char> initial;
  std::set<char> used;
  bool distinct = true;
  for (auto& a : arms)
    if (!initial.count(a)) {
      char c = a.empty() ? '?' : static_cast<char>(std::toupper(a[0]));
      distinct = distinct && used.insert(c).second;
      initial[a] = c;
    }
  if (!distinct) return join(arms, " -> ");
  std::string blocks;
  int current = points_.empty() ? 0 : points_.front()->block;
  size_t count = points_.empty() ? 0 : 1;
  for (auto* p : points_) {
    if (p->block != current) {
      blocks += ' ';
      current = p->block;
      ++count;
    }
    blocks += initial[p->arm];
  }
  std::vector<std::string> legend;
  for (auto& [arm, c] : initial) legend.push_back(fmt::format("{} = {}", c, arm));
  return fmt::format("{} blocks in seeded order {} ({})", count, blocks, join(legend, ", "));
}

// Ops per round of each workload, from the rows (time-based workloads vary).
std::string Builder::ops_phrase() const {
  std::vector<std::string> order;
  std::map<std::string, std::set<uint64_t>> ops;
  for (auto& r : b_.rows) {
    if (!ops.count(r.workload)) order.push_back(r.workload);
    ops[r.workload].insert(r.ops);
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (auto& w : order) {
    std::string what = ops[w].size() == 1 ? thousands(*ops[w].begin()) + " ops" : "time-based";
    auto g = std::find_if(groups.begin(), groups.end(), [&](auto& x) { return x.first == what; });
    if (g == groups.end())
      groups.push_back({what, {w}});
    else
      g->second.push_back(w);
  }
  if (groups.size() == 1) return groups[0].first;
  std::vector<std::string> parts;
  for (auto& [what, ws] : groups) parts.push_back(what + " (" + english_list(ws) + ")");
  return join(parts, " / ");
}

namespace {

// Text from a bundle reaches terminals and mails: no control character of it survives into
// the document (ESC would move the cursor or forge a line, CR overwrite one). Newlines stay
// only in preformatted blocks, which indent every line a bundle supplies under their own:
// a description or failure reason cannot start a line of the report ("Verdict: ...").
void drop_control_characters(Document& doc) {
  auto one = [](std::string& s) { s = one_line(s); };
  one(doc.title);
  one(doc.verdict);
  for (auto& w : doc.workloads) {
    for (auto* s : {&w.workload, &w.metric, &w.unit, &w.verdict, &w.line}) one(*s);
  }
  for (auto& block : doc.blocks) {
    block.text = block.kind == Block::Kind::preformatted ? printable_lines(block.text) : one_line(block.text);
    for (auto* s : {&block.cls, &block.caption, &block.note}) one(*s);
    for (auto& [key, value] : block.facts) one(key), one(value);
    for (auto& column : block.table.columns) one(column.title);
    for (auto& row : block.table.rows)
      for (auto& cell : row) one(cell.text), one(cell.full);
  }
}

}  // namespace

Document build_document(const evidence::Bundle& bundle, const Options& options) {
  auto doc = Builder(bundle, options).build();
  drop_control_characters(doc);
  return doc;
}

}  // namespace ks::report::detail

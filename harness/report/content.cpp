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

#include "report/document.hpp"
#include "report/format.hpp"

namespace ks::report::detail {
namespace {

using evidence::Bundle;
using evidence::Point;
using evidence::Row;
using evidence::WorkloadAnalysis;
using nlohmann::json;

constexpr size_t kReplyWidth = 72;
constexpr size_t kMaxListedRows = 10;

bool is_timing_row(const Row& r) { return !r.warmup; }

std::string row_problem(const Row& r) {
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

std::string memory_phrase(const json& machine) {
  auto number = [&](const char* key) -> std::optional<double> {
    auto it = machine.is_object() ? machine.find(key) : machine.end();
    if (!machine.is_object() || it == machine.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  };
  std::optional<double> gib;
  if (auto v = number("memory_gib"))
    gib = *v;
  else if (auto v = number("memory_mib"))
    gib = *v / 1024;
  else if (auto v = number("memory_kib"))
    gib = *v / (1024 * 1024);
  else if (auto v = number("mem_total_kib"))
    gib = *v / (1024 * 1024);
  else if (auto v = number("memory_bytes"))
    gib = *v / (1024.0 * 1024 * 1024);
  if (!gib) return first_of(machine, {"memory"});
  if (std::fabs(*gib - std::round(*gib)) < 0.05) return fmt::format("{:.0f} GiB memory", *gib);
  return fmt::format("{:.1f} GiB memory", *gib);
}

class Builder {
 public:
  Builder(const Bundle& bundle, const Options& options) : b_(bundle), options_(options) {
    for (auto& p : b_.points) points_.push_back(&p);
    std::stable_sort(points_.begin(), points_.end(),
                     [](const Point* x, const Point* y) { return x->id < y->id; });
    pick_arms();
  }

  Document build() {
    doc_.title =
        "ksandwich report: " +
        (b_.experiment_name.empty() ? std::string("(unnamed experiment)") : b_.experiment_name);
    doc_.verdict = b_.verdict;
    environment_changes();
    header();
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

 private:
  const Bundle& b_;
  const Options& options_;
  Document doc_;
  std::vector<const Point*> points_;
  std::string control_ = "control", patched_ = "patched";

  // ---- blocks ---------------------------------------------------------------------------

  void heading(std::string text) {
    Block block;
    block.kind = Block::Kind::heading;
    block.text = std::move(text);
    doc_.blocks.push_back(std::move(block));
  }

  Block& paragraph(std::string text, std::string cls = {}, size_t indent = 0) {
    Block block;
    block.kind = Block::Kind::paragraph;
    block.text = std::move(text);
    block.cls = std::move(cls);
    block.indent = indent;
    doc_.blocks.push_back(std::move(block));
    return doc_.blocks.back();
  }

  Block& table(Table t, std::string cls) {
    Block block;
    block.kind = Block::Kind::table;
    block.table = std::move(t);
    block.cls = std::move(cls);
    doc_.blocks.push_back(std::move(block));
    return doc_.blocks.back();
  }

  void preformatted(std::string text, std::string cls) {
    Block block;
    block.kind = Block::Kind::preformatted;
    block.text = std::move(text);
    block.cls = std::move(cls);
    doc_.blocks.push_back(std::move(block));
  }

  // ---- lookups --------------------------------------------------------------------------

  void pick_arms() {
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

  const Point* point(int id) const {
    for (auto* p : points_)
      if (p->id == id) return p;
    return nullptr;
  }

  std::string point_name(int id, const std::string& arm) const {
    return fmt::format("point {} ({})", id, arm);
  }

  bool confirm_scheme() const {
    if (b_.analysis && b_.analysis->scheme == "confirm") return true;
    if (first_of(b_.plan, {"scheme"}) == "confirm") return true;
    return points_.size() > 3;
  }

  std::string scheme() const {
    std::string s = first_of(b_.plan, {"scheme"});
    if (s.empty() && b_.analysis) s = b_.analysis->scheme;
    if (s.empty()) s = first_of(b_.experiment, {"scheme"});
    return s.empty() ? "screen" : s;
  }

  // Distinct values of a noise control across points, in run order.
  std::vector<std::string> environment_values(std::initializer_list<const char*> keys) const {
    std::vector<std::string> values;
    for (auto* p : points_) {
      std::string v = first_of(p->environment, keys);
      if (!v.empty() && std::find(values.begin(), values.end(), v) == values.end())
        values.push_back(v);
    }
    return values;
  }

  // What the points read back wins over what the host says (a guest has its own
  // clocksource); a disagreement between points is shown, not hidden.
  std::string noise_control(std::initializer_list<const char*> keys) const {
    auto values = environment_values(keys);
    if (values.empty()) return first_of(b_.machine, keys);
    if (values.size() == 1) return values[0];
    return join(values, "/") + " (differs between points)";
  }

  static std::string join(const std::vector<std::string>& parts, const std::string& sep) {
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
    return out;
  }

  std::string workload_label(const std::string& id) const {
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

  std::string order_phrase() const {
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
  std::string ops_phrase() const {
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

  // ---- header ---------------------------------------------------------------------------

  void header() {
    Block facts, more;
    facts.kind = more.kind = Block::Kind::facts;
    facts.cls = more.cls = "ks-facts";
    more.detail = true;  // long or bookkeeping: not for the mailing-list header
    auto add = [](Block& block, std::string key, std::string value) {
      if (!value.empty()) block.facts.emplace_back(std::move(key), std::move(value));
    };
    add(facts, "Backend", backend_line());
    add(facts, "Kernels", kernels());
    add(facts, "Machine", machine_line());
    for (auto& [key, value] : storage_lines()) add(facts, key, value);
    add(facts, "Plan", plan_line());
    add(facts, "Blocks", blocks_line());
    add(facts, "Source", source_line());
    add(facts, "Toolchain", toolchain_line());
    for (auto& [key, value] : patch_lines()) add(facts, key, value);
    add(facts, "Tool", tool_line());
    add(facts, "Time", time_line());
    add(more, "Cmdline", noise_control({"cmdline", "kernel_cmdline", "kernel_command_line"}));
    add(more, "Created", b_.created_at);
    doc_.blocks.push_back(std::move(facts));
    if (!more.facts.empty()) doc_.blocks.push_back(std::move(more));
    std::string description = first_of(b_.experiment, {"description"});
    if (!description.empty()) paragraph(description, "ks-description");
  }

  std::string kernels() const {
    std::vector<std::string> arms;
    for (auto* p : points_)
      if (std::find(arms.begin(), arms.end(), p->arm) == arms.end()) arms.push_back(p->arm);
    std::vector<std::string> parts;
    std::set<std::string> releases;
    for (auto& arm : arms) {
      std::string release;
      if (b_.builds.is_object() && b_.builds.contains(arm))
        release = first_of(b_.builds[arm], {"kernel_release"});
      if (release.empty()) {
        std::vector<std::string> seen;
        for (auto* p : points_)
          if (p->arm == arm && !p->kernel_release.empty() &&
              std::find(seen.begin(), seen.end(), p->kernel_release) == seen.end())
            seen.push_back(p->kernel_release);
        release = join(seen, "/");
      }
      if (release.empty()) continue;
      releases.insert(release);
      parts.push_back(arm + " " + release);
    }
    if (releases.size() == 1 && parts.size() > 1) return *releases.begin() + " (every arm)";
    return join(parts, ", ");
  }

  std::string machine_line() const {
    std::vector<std::string> parts;
    auto add = [&](std::string s) {
      if (!s.empty()) parts.push_back(std::move(s));
    };
    add(first_of(b_.machine, {"cpu_model", "model_name", "cpu"}));
    std::string cores = first_of(b_.machine, {"cores", "cpus", "logical_cpus", "nproc"});
    if (!cores.empty()) add(cores + " CPUs");
    add(memory_phrase(b_.machine));
    std::string virt = noise_control({"virtualization", "virt", "accel", "accelerator"});
    if (!virt.empty()) add("virtualization " + virt);
    std::string clock = noise_control({"clocksource", "current_clocksource"});
    if (!clock.empty()) add("clocksource " + clock);
    std::string governor = noise_control({"governor", "cpufreq_governor"});
    if (!governor.empty()) add("governor " + governor);
    std::string preempt = noise_control({"preempt", "preemption"});
    if (!preempt.empty()) add("preempt " + preempt);
    std::string pinned = noise_control({"pinned_cpu", "cpu_pinned", "pin_cpu"});
    if (pinned.empty()) {
      auto values = environment_values({"cpu"});  // "cpu" is the pinned CPU when a number
      if (!values.empty() && std::all_of(values.begin(), values.end(), [](auto& v) {
            return !v.empty() && (std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '-');
          }))
        pinned = join(values, "/");
    }
    if (pinned == "-1")
      add("not pinned");
    else if (!pinned.empty())
      add("workload pinned to CPU " + pinned);
    return join(parts, ", ");
  }

  static std::string storage_line(const json& s) {
    if (!s.is_object() || s.empty()) return "";
    std::vector<std::string> parts;
    std::string kind = first_of(s, {"kind"});
    std::string size;
    if (auto mib = count_of(s, "size_mib")) size = size_phrase(*mib << 20);
    std::string device = first_of(s, {"device"});
    std::string head = kind;
    if (!size.empty()) head += (head.empty() ? "" : " ") + size;
    if (!device.empty()) head += (head.empty() ? "" : " ") + ("(" + device + ")");
    if (!head.empty()) parts.push_back(head);
    parts.push_back("fresh btrfs per point");
    // "mkfs.btrfs, part of btrfs-progs v6.2" says more than needed: keep the package part.
    std::string version = first_of(s, {"mkfs_version", "btrfs_progs"});
    if (auto at = version.find("btrfs-progs"); at != std::string::npos)
      version = version.substr(at);
    std::string mkfs = first_of(s, {"mkfs_options"});
    parts.push_back("mkfs.btrfs " + (mkfs.empty() ? std::string("defaults") : mkfs) +
                    (version.empty() ? "" : " (" + version + ")"));
    std::string mount = first_of(s, {"mount_options"});
    parts.push_back("mount " + (mount.empty() ? std::string("defaults") : "-o " + mount));
    return join(parts, ", ");
  }

  // One line when every point had the same storage (device names aside), else one per arm.
  std::vector<std::pair<std::string, std::string>> storage_lines() const {
    std::vector<std::pair<std::string, std::string>> per_arm;  // arm, description
    std::set<std::string> shapes;
    for (auto* p : points_) {
      std::string line = storage_line(p->storage);
      if (line.empty()) continue;
      json shape = p->storage;
      shape.erase("device");
      shapes.insert(storage_line(shape));
      if (std::none_of(per_arm.begin(), per_arm.end(), [&](auto& x) { return x.first == p->arm; }))
        per_arm.emplace_back(p->arm, line);
    }
    if (per_arm.empty()) return {};
    if (shapes.size() == 1) return {{"Storage", per_arm[0].second}};
    std::vector<std::pair<std::string, std::string>> out;
    for (auto& [arm, line] : per_arm) out.emplace_back("Storage (" + arm + ")", line);
    return out;
  }

  // "qemu, accelerator tcg (why)": which accelerator ran is part of what was measured.
  std::string backend_line() const {
    const auto& a = b_.machine.is_object() ? b_.machine.value("accelerator", nlohmann::json()) : nlohmann::json();
    if (!a.is_object() || !a.value("used", nlohmann::json()).is_string()) return b_.backend;
    return b_.backend + ", accelerator " + a["used"].get<std::string>() + " (" + a.value("reason", "") + ")";
  }

  // Confirm: how many blocks ran, why the run stopped there, and how it was sized.
  std::string blocks_line() const {
    if (!b_.extra.is_object() || !b_.extra.contains("stopped")) return "";
    std::string line = b_.extra["stopped"].value("reason", "");
    if (b_.extra.contains("sizing")) line += "; sized: " + b_.extra["sizing"].value("reason", "");
    return line;
  }

  // When no point measured anything, tables of zeros say nothing: one line with the first
  // failure and what to do instead.
  void nothing_measured() {
    const bool measured = std::any_of(b_.rows.begin(), b_.rows.end(), [](auto& r) {
      return !r.warmup && r.error.empty() && (r.ns_per_op || r.iops || r.bytes_per_s);
    });
    if (measured || b_.points.empty()) return;
    auto failed = std::find_if(b_.points.begin(), b_.points.end(), [](auto& p) { return p.status == "failed"; });
    if (failed == b_.points.end()) return;  // nothing ran yet: not a failure
    std::string why = failed->failure;
    while (!why.empty() && (why.back() == '.' || why.back() == ' ')) why.pop_back();
    paragraph(fmt::format("No point produced a measurement. The first failure, point {} ({}): {}. "
                          "Fix that (`ksandwich doctor` checks the machine) and run again, or "
                          "`ksandwich run --resume DIR` to rerun the failed points.",
                          failed->id, failed->arm, why),
              "ks-nothing-measured");
  }

  std::string plan_line() const {
    std::vector<std::string> parts;
    std::string order = order_phrase();
    parts.push_back(scheme() + (order.empty() ? "" : ": " + order));
    std::string rounds = first_of(b_.plan, {"rounds"});
    if (rounds.empty()) rounds = first_of(b_.experiment, {"rounds"});
    std::string ops = ops_phrase();
    if (!rounds.empty()) parts.push_back(rounds + " rounds" + (ops.empty() ? "" : " x " + ops));
    std::string warmup = first_of(b_.plan, {"warmup_rounds", "warmup"});
    if (warmup.empty()) warmup = first_of(b_.experiment, {"warmup_rounds"});
    if (!warmup.empty())
      parts.push_back(warmup + (warmup == "1" ? " warm-up round" : " warm-up rounds"));
    std::string seed = first_of(b_.plan, {"seed"});
    if (!seed.empty()) parts.push_back("seed " + seed);
    return join(parts, ", ");
  }

  // "kind tarball, version 7.1.0, sha256 f9a48549a15a...": the naming keys first.
  static std::string describe_object(const json& j) {
    if (!j.is_object()) return scalar(j);
    static const std::vector<std::string> first = {"kind", "version", "path", "commit"};
    std::vector<std::string> parts;
    auto add = [&](const std::string& key, const json& value) {
      std::string v = scalar(value);
      if (!v.empty()) parts.push_back(key + " " + shorten(v));
    };
    for (auto& key : first)
      if (j.contains(key)) add(key, j[key]);
    for (auto& [key, value] : j.items())
      if (std::find(first.begin(), first.end(), key) == first.end()) add(key, value);
    return join(parts, ", ");
  }

  json arm_build(const std::string& arm) const {
    if (!b_.builds.is_object()) return json();
    auto it = b_.builds.find(arm);
    return it == b_.builds.end() ? json() : *it;
  }

  std::string source_line() const {
    json control = arm_build(control_), patched = arm_build(patched_);
    json source = control.is_object() && control.contains("source") ? control["source"] : json();
    if (source.is_null() && patched.is_object() && patched.contains("source"))
      source = patched["source"];
    return describe_object(source);
  }

  std::string toolchain_line() const {
    json build = arm_build(control_);
    if (!build.is_object()) build = arm_build(patched_);
    std::vector<std::string> parts;
    for (const char* key : {"compiler", "linker"}) {
      std::string v = first_of(build, {key});
      if (!v.empty()) parts.push_back(v);
    }
    return join(parts, ", ");
  }

  std::vector<json> patches(const std::string& arm) const {
    json build = arm_build(arm);
    std::vector<json> out;
    if (build.is_object() && build.contains("patches") && build["patches"].is_array())
      for (auto& p : build["patches"])
        if (p.is_object()) out.push_back(p);
    return out;
  }

  std::vector<std::pair<std::string, std::string>> patch_lines() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const std::string& arm : {control_, patched_}) {
      auto list = patches(arm);
      for (size_t i = 0; i < list.size(); ++i) {
        std::string key = "Patch";
        if (arm != patched_) key += " (" + arm + ")";
        if (list.size() > 1) key += fmt::format(" {}/{}", i + 1, list.size());
        std::string subject = first_of(list[i], {"subject"});
        std::string file = first_of(list[i], {"file"});
        std::string sha = first_of(list[i], {"sha256"});
        std::string value = subject.empty() ? file : subject;
        if (!subject.empty() && !file.empty()) value += " [" + file + "]";
        if (!sha.empty()) value += ", sha256 " + sha;
        if (!value.empty()) out.emplace_back(key, value);
      }
    }
    return out;
  }

  // Where the run's time went (bundle extra.timings): builds, boots, workloads, analysis.
  std::string time_line() const {
    if (!b_.extra.is_object() || !b_.extra.contains("timings")) return "";
    auto& t = b_.extra["timings"];
    auto secs = [](double s) {
      return s >= 60 ? fmt::format("{}m{:02d}s", int(s) / 60, int(s) % 60) : fmt::format("{:.1f} s", s);
    };
    std::vector<std::string> parts;
    if (t.contains("builds") && t["builds"].is_object())
      for (auto& [arm, b] : t["builds"].items())
        parts.push_back(fmt::format("{} kernel {} ({})", arm, secs(b.value("seconds", 0.0)),
                                    b.value("cache_hit", false) ? "cached" : b.value("mode", "") + " build"));
    double points = 0, workloads = 0, boot = 0;
    int booted = 0;
    for (auto& p : t.value("points", json::array())) {
      points += p.value("seconds", 0.0);
      if (p.contains("workload_s") && p["workload_s"].is_number()) workloads += p["workload_s"].get<double>();
      if (p.contains("boot_to_agent_s") && p["boot_to_agent_s"].is_number()) {
        boot += p["boot_to_agent_s"].get<double>();
        ++booted;
      }
    }
    parts.push_back(fmt::format("points {}", secs(points)));
    if (booted) parts.push_back(fmt::format("boot to agent {:.1f} s a point", boot / booted));
    if (workloads > 0) parts.push_back(fmt::format("workloads in the guests {}", secs(workloads)));
    parts.push_back(fmt::format("analysis {:.2f} s", t.value("analysis_s", 0.0)));
    return join(parts, ", ");
  }

  std::string tool_line() const {
    std::vector<std::string> parts;
    for (const char* key : {"name", "version"}) {
      std::string v = first_of(b_.tool, {key});
      if (!v.empty()) parts.push_back(v);
    }
    std::string out = join(parts, " ");
    std::string revision = first_of(b_.tool, {"git_revision"});
    if (!revision.empty()) out += out.empty() ? "git " + revision : " (git " + revision + ")";
    return out;
  }

  // ---- results --------------------------------------------------------------------------

  void plots() {
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
            Unit unit = unit_for(a.metric);
            block.caption += ", " + unit.name + " (" + unit.better() + ")";
            block.note = verdict_text(a);
          }
      doc_.blocks.push_back(std::move(block));
    }
  }

  std::string rounds_phrase(const std::vector<const WorkloadAnalysis*>& group) const {
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

  void results() {
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
    for (auto& w : workloads) verdict_line(w);
    notes();
  }

  // What the design cannot show, once per note, naming the workloads when not all.
  void notes() {
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

  // `compare --allow-environment-change`: what differed between the two runs, first.
  void environment_changes() {
    auto it = b_.extra.is_object() ? b_.extra.find("environment_changes") : b_.extra.end();
    if (!b_.extra.is_object() || it == b_.extra.end() || !it->is_array() || it->empty()) return;
    paragraph("Environment changed between A and B (compared with --allow-environment-change); "
              "the ratios below include these differences:", "ks-environment-changes ks-bad");
    for (auto& c : *it)
      paragraph(fmt::format("- {}: {} -> {}", first_of(c, {"name"}), first_of(c, {"before"}), first_of(c, {"after"})),
                "ks-environment-change", 2);
  }

  // Differences in what the points read back (clocksource, governor, ...).
  void warnings() {
    auto it = b_.extra.is_object() ? b_.extra.find("warnings") : b_.extra.end();
    if (!b_.extra.is_object() || it == b_.extra.end() || !it->is_array() || it->empty()) return;
    heading("Warnings");
    for (auto& w : *it) {
      std::string text = scalar(w);
      if (!text.empty()) paragraph("- " + text, "ks-warning", 2);
    }
  }

  void sandwich(const std::vector<const WorkloadAnalysis*>& group) {
    Unit unit = unit_for(group[0]->metric);
    std::vector<std::string> arms;
    for (auto* p : points_) arms.push_back(p->arm);
    if (arms.size() != 3) arms = {control_, patched_, control_};
    paragraph(fmt::format("In a {} sandwich, means across {}, {} ({}):", join(arms, " -> "),
                          rounds_phrase(group), unit.name, unit.better()),
              "ks-sandwich-caption");
    Table t;
    t.columns = {{"operation", Align::left},
                 {arms[0] + " A", Align::right},
                 {arms[1], Align::right},
                 {arms[2] + " B", Align::right},
                 {arms[1] + " vs " + arms[0] + " midpoint", Align::left}};
    for (auto* w : group)
      t.rows.push_back({workload_label(w->workload), fixed(w->control_a * unit.scale),
                        fixed(w->patched * unit.scale), fixed(w->control_b * unit.scale),
                        signed_percent(w->delta_pct)});
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
  void block_table(const WorkloadAnalysis& w) {
    if (w.block_ratios.empty() && w.blocks_dropped.empty()) return;
    Unit unit = unit_for(w.metric);
    const size_t used = w.block_ratios.size(), dropped = w.blocks_dropped.size();
    paragraph(fmt::format("{}: {} of {} blocks used ({} dropped); per block, {} / {} of the "
                          "point medians (points: {}, {}):",
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

  void point_table(const WorkloadAnalysis& w, bool detail) {
    Unit unit = unit_for(w.metric);
    paragraph(fmt::format("{}: per-point means and medians, {} ({}):",
                          workload_label(w.workload), unit.name, unit.better()),
              "ks-points-caption")
        .detail = detail;
    // Blocks mean something only in a confirm run.
    bool blocks = confirm_scheme();
    Table t;
    t.columns = {{"point", Align::right},  {"block", Align::right},  {"arm", Align::left},
                 {"mean", Align::right},   {"median", Align::right}, {"stddev", Align::right},
                 {"n", Align::right}};
    if (!blocks) t.columns.erase(t.columns.begin() + 1);
    for (auto& s : w.points) {
      const Point* p = point(s.point);
      std::vector<Cell> row = {std::to_string(s.point),
                               p ? std::to_string(p->block) : "",
                               s.arm,
                               fixed(s.mean * unit.scale),
                               fixed(s.median * unit.scale),
                               fixed(s.stddev * unit.scale),
                               std::to_string(s.n)};
      if (!blocks) row.erase(row.begin() + 1);
      t.rows.push_back(std::move(row));
    }
    Block& block = table(std::move(t), "ks-points");
    block.detail = detail;
    block.text = w.workload;
  }

  void semantic() {
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

  std::string effect(const WorkloadAnalysis& w) const {
    return w.ratio_ci ? ratio_percent(w.ratio_ci->estimate) : signed_percent(w.delta_pct, 1);
  }

  std::string verdict_words(const WorkloadAnalysis& w) const {
    std::string out = w.verdict.empty() ? "no verdict" : w.verdict;
    if (w.verdict == "REGRESSION" || w.verdict == "IMPROVEMENT")
      out += w.material ? " (material)" : " (not material)";
    if (!w.gates_failed.empty()) out += " (failed: " + join(w.gates_failed, ", ") + ")";
    return out;
  }

  static std::string verdict_prose(const WorkloadAnalysis& w) {
    if (w.verdict == "IMPROVEMENT" || w.verdict == "REGRESSION") {
      std::string word = w.verdict == "IMPROVEMENT" ? "improvement" : "regression";
      return w.material ? "a material " + word : "an " + word + " too small to be material";
    }
    if (w.verdict == "NO_CHANGE") return "no change";
    if (w.verdict.empty()) return "no verdict";
    std::string lower;
    for (char c : w.verdict)
      lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return lower;
  }

  static std::string capitalised(std::string s) {
    if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    return s;
  }

  // "95% CI -28.1% .. -25.9%"; a Holm-widened level keeps its decimal ("98.3% CI").
  static std::string ci_phrase(const evidence::Interval& ci) {
    double level = ci.level * 100;
    std::string shown = std::fabs(level - std::round(level)) < 0.05 ? fmt::format("{:.0f}", level)
                                                                    : fmt::format("{:.1f}", level);
    return fmt::format("{}% CI {} .. {}", shown, ratio_percent(ci.low), ratio_percent(ci.high));
  }

  void verdict_line(const WorkloadAnalysis& w) {
    paragraph(verdict_text(w), "ks-verdict", 2);
    inference_line(w);
  }

  std::string verdict_text(const WorkloadAnalysis& w) const {
    Unit unit = unit_for(w.metric);
    std::string line =
        fmt::format("{}: {} vs {}: {} {}", w.workload, patched_, control_, effect(w), unit.name);
    if (w.ratio_ci) line += " (" + ci_phrase(*w.ratio_ci) + ")";
    line += ", " + verdict_words(w);
    if (w.mde_pct) line += ", MDE " + percent(*w.mde_pct, 1);
    // The analysis caps the estimate at 1,000 blocks (stats::blocks_needed): beyond it,
    // no confirm run of reasonable size decides the question.
    if (w.verdict == "INCONCLUSIVE" && w.blocks_needed)
      line += *w.blocks_needed >= 1000 ? std::string(", more than 1,000 blocks needed")
                                       : fmt::format(", about {} blocks needed", *w.blocks_needed);
    return line;
  }

  void inference_line(const WorkloadAnalysis& w) {
    std::vector<std::string> more;
    if (w.hodges_lehmann)
      more.push_back(fmt::format("Hodges-Lehmann {} ({})",
                                 ratio_percent(w.hodges_lehmann->estimate),
                                 ci_phrase(*w.hodges_lehmann)));
    if (w.ratio_ci90) more.push_back(ci_phrase(*w.ratio_ci90) + " (equivalence)");
    if (w.bootstrap_ci)
      more.push_back("bootstrap " + ci_phrase(*w.bootstrap_ci) + " (descriptive, not the decision)");
    if (w.sd_log_ratio)
      more.push_back("SD of a block ratio " + percent(100 * *w.sd_log_ratio, 2));
    if (w.calibrated_sd_log_ratio)
      more.push_back("calibrated " + percent(100 * *w.calibrated_sd_log_ratio, 2));
    if (w.mde_pct && !w.mde_basis.empty()) more.push_back("MDE from the " + w.mde_basis + " SD");
    if (w.t_test_p) {
      std::string t = "t-test " + p_value(*w.t_test_p);
      if (w.degrees_of_freedom) t += fmt::format(" ({:g} df)", *w.degrees_of_freedom);
      more.push_back(t);
    }
    if (w.p_holm) more.push_back("Holm-adjusted " + p_value(*w.p_holm));
    if (w.mann_whitney_p)
      more.push_back("Mann-Whitney " + p_value(*w.mann_whitney_p) +
                     (w.mann_whitney_method.empty() ? "" : " (" + w.mann_whitney_method + ")"));
    if (w.within_point_sd_pct)
      more.push_back("SD within points " + percent(*w.within_point_sd_pct, 1));
    if (w.between_point_sd_pct)
      more.push_back("SD between points " + percent(*w.between_point_sd_pct, 1));
    if (!more.empty())
      paragraph(w.workload + ": " + join(more, ", "), "ks-inference", 2).detail = true;
  }

  // ---- evidence that the comparison was fair --------------------------------------------

  void gates() {
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

  void failed_points() {
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

  static std::vector<std::string> ks_split_lines(const std::string& text) {
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

  void audit() {
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

  void direct_hits() {
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
        bool available = e.value("available", true);
        bool filtered = e.value("filtered", true);
        bool required = e.value("required", false);
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

  void health() {
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
        lines += "    " + (kind.empty() ? "" : "[" + kind + "] ") + line + "\n";
      }
      preformatted(lines, "ks-health-findings");
    }
  }

  std::vector<std::string> failed_gate_names() const {
    std::vector<std::string> names;
    if (!b_.analysis) return names;
    for (auto& g : b_.analysis->gates)
      if (!g.passed && std::find(names.begin(), names.end(), g.name) == names.end())
        names.push_back(g.name);
    return names;
  }

  std::vector<std::string> invalid_workloads() const {
    std::vector<std::string> names;
    if (b_.analysis)
      for (auto& w : b_.analysis->workloads)
        if (w.verdict == "INVALID") names.push_back(w.workload);
    return names;
  }

  std::string overall_verdict() const {
    std::string line = "Verdict: " + b_.verdict;
    auto failed = failed_gate_names();
    if (b_.verdict == "INVALID" && !failed.empty())
      line += " (failed gates: " + join(failed, ", ") + ")";
    if (auto invalid = invalid_workloads(); b_.verdict != "INVALID" && !invalid.empty())
      line += " (INVALID: " + english_list(invalid) + ")";
    if (!b_.analysis) line += " (no analysis yet)";
    return line;
  }

  // ---- reply ----------------------------------------------------------------------------

  void reply() {
    std::vector<json> quoted;
    for (auto& p : patches(patched_))
      if (!first_of(p, {"message_id"}).empty()) quoted.push_back(p);
    if (quoted.empty()) return;
    heading("Reply");
    std::string out = "--- reply ---\n";
    for (size_t i = 0; i < quoted.size(); ++i) {
      auto& p = quoted[i];
      std::string date = first_of(p, {"date"});
      std::string author = display_name(first_of(p, {"author"}));
      if (i > 0) out += "\n";
      if (!date.empty() && !author.empty())
        out += "On " + date + ", " + author + " wrote:\n";
      else if (!author.empty())
        out += author + " wrote:\n";
      std::string subject = first_of(p, {"subject"});
      if (!subject.empty()) out += "> Subject: " + subject + "\n";
      std::string id = first_of(p, {"message_id"});
      if (id.front() != '<') id = "<" + id + ">";
      out += "> Message-ID: " + id + "\n";
    }
    out += "\n" + wrap(reply_summary(), kReplyWidth) + "\n";
    if (!options_.tested_by.empty() && b_.verdict != "INVALID")
      out += "\nTested-by: " + options_.tested_by + "\n";
    preformatted(out, "ks-reply");
  }

  std::string reply_summary() const {
    std::string setup = "I ran ";
    setup += confirm_scheme() ? "a randomised-block comparison" : "a sandwich";
    std::string order = order_phrase();
    if (!order.empty()) setup += " (" + order + ")";
    setup += " with ksandwich";
    if (!b_.backend.empty()) setup += " on the " + b_.backend + " backend";
    std::string kind;
    for (auto* p : points_)
      if (kind.empty()) kind = first_of(p->storage, {"kind"});
    if (!kind.empty()) setup += ", with a fresh btrfs on " + kind + " for every point";
    setup += ".";

    std::vector<std::string> effects;
    if (b_.analysis)
      for (auto& w : b_.analysis->workloads) {
        std::string e = w.workload + " " + effect(w) + " " + unit_for(w.metric).name;
        std::vector<std::string> inside;
        if (w.ratio_ci) inside.push_back(ci_phrase(*w.ratio_ci));
        inside.push_back(verdict_prose(w));
        effects.push_back(e + " (" + join(inside, ", ") + ")");
      }
    std::string text = setup;
    if (!effects.empty())
      text += " " + capitalised(patched_) + " vs " + control_ + ": " + english_list(effects) + ".";

    size_t total = 0, bad = 0;
    for (auto& r : b_.rows)
      if (is_timing_row(r)) {
        ++total;
        bad += row_problem(r).empty() ? 0 : 1;
      }
    if (total > 0 && bad == 0)
      text += fmt::format(" All {} timing rows passed the semantic checks.", thousands(total));
    else if (bad > 0)
      text += fmt::format(" {} of {} timing rows failed the semantic checks.", thousands(bad),
                          thousands(total));
    if (b_.verdict == "INVALID") {
      auto failed = failed_gate_names();
      text += " The run is INVALID" +
              (failed.empty() ? std::string() : " (failed: " + join(failed, ", ") + ")") +
              ", so these figures are not evidence either way.";
    } else {
      text += " Verdict: " + b_.verdict + ".";
    }
    return text;
  }
};

}  // namespace

Document build_document(const evidence::Bundle& bundle, const Options& options) {
  return Builder(bundle, options).build();
}

}  // namespace ks::report::detail

// The header of a report: what was run and where (backend, kernels, machine, storage,
// plan, source, toolchain, patches, tool, time), and the line when nothing was measured.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "report/builder.hpp"
#include "report/format.hpp"

namespace ks::report::detail {
namespace {

using nlohmann::json;

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

}  // namespace

void Builder::header() {
  Block facts, more;
  facts.kind = more.kind = Block::Kind::facts;
  facts.cls = more.cls = "ks-facts";
  more.detail = true;  // long or bookkeeping: not for the mailing-list header
  auto add = [](Block& block, std::string key, std::string value) {
    if (!value.empty()) block.facts.emplace_back(std::move(key), std::move(value));
  };
  add(facts, "Backend", backend_line());
  add(facts, "Clock", clock_line());
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
  // Labelled: in every view the experiment's words start after ours ("Verdict: ..." in a
  // description is not a line of the report's own, nineteenth attack).
  if (!description.empty()) paragraph("Description: " + description, "ks-description");
}

std::string Builder::kernels() const {
  std::vector<std::string> arms;  // control and patched: names, two of them
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
      std::set<std::string> known;  // no scan per point
      for (auto* p : points_)
        if (p->arm == arm && !p->kernel_release.empty() && known.insert(p->kernel_release).second)
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

std::string Builder::machine_line() const {
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

std::string Builder::storage_line(const json& s) {
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
std::vector<std::pair<std::string, std::string>> Builder::storage_lines() const {
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
std::string Builder::backend_line() const {
  const auto& a = b_.machine.is_object() ? b_.machine.value("accelerator", nlohmann::json()) : nlohmann::json();
  if (!a.is_object() || !a.value("used", nlohmann::json()).is_string()) return b_.backend;
  return b_.backend + ", accelerator " + a["used"].get<std::string>() + " (" + field_or(a, "reason", std::string()) + ")";
}

std::string Builder::clock_line() const {
  std::string line = clock_.measures;
  if (clock_.deterministic) line += "; deterministic, not wall time: " + clock_.ns_name + "/op counts instructions";
  if (!clock_.cannot_see.empty()) line += "; " + clock_.cannot_see;
  return line;
}

// Confirm: how many blocks ran, why the run stopped there, and how it was sized.
std::string Builder::blocks_line() const {
  if (!b_.extra.is_object() || !b_.extra.contains("stopped")) return "";
  std::string line = field_or(b_.extra["stopped"], "reason", std::string());
  if (b_.extra.contains("sizing")) line += "; sized: " + field_or(b_.extra["sizing"], "reason", std::string());
  return line;
}

// When no point measured anything, tables of zeros say nothing: one line with the first
// failure and what to do instead.
void Builder::nothing_measured() {
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

std::string Builder::plan_line() const {
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
std::string Builder::describe_object(const json& j) {
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

json Builder::arm_build(const std::string& arm) const {
  if (!b_.builds.is_object()) return json();
  auto it = b_.builds.find(arm);
  return it == b_.builds.end() ? json() : *it;
}

std::string Builder::source_line() const {
  json control = arm_build(control_), patched = arm_build(patched_);
  json source = control.is_object() && control.contains("source") ? control["source"] : json();
  if (source.is_null() && patched.is_object() && patched.contains("source"))
    source = patched["source"];
  return describe_object(source);
}

std::string Builder::toolchain_line() const {
  json build = arm_build(control_);
  if (!build.is_object()) build = arm_build(patched_);
  std::vector<std::string> parts;
  for (const char* key : {"compiler", "linker"}) {
    std::string v = first_of(build, {key});
    if (!v.empty()) parts.push_back(v);
  }
  return join(parts, ", ");
}

std::vector<json> Builder::patches(const std::string& arm) const {
  json build = arm_build(arm);
  std::vector<json> out;
  if (build.is_object() && build.contains("patches") && build["patches"].is_array())
    for (auto& p : build["patches"])
      if (p.is_object()) out.push_back(p);
  return out;
}

std::vector<std::pair<std::string, std::string>> Builder::patch_lines() const {
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
std::string Builder::time_line() const {
  if (!b_.extra.is_object() || !b_.extra.contains("timings")) return "";
  auto& t = b_.extra["timings"];
  auto secs = [](double s) {
    return s >= 60 ? fmt::format("{}m{:02d}s", int(s) / 60, int(s) % 60) : fmt::format("{:.1f} s", s);
  };
  std::vector<std::string> parts;
  if (t.contains("builds") && t["builds"].is_object())
    for (auto& [arm, b] : t["builds"].items())
      parts.push_back(fmt::format("{} kernel {} ({})", arm, secs(field_or(b, "seconds", 0.0)),
                                  field_or(b, "cache_hit", false) ? "cached" : field_or(b, "mode", std::string()) + " build"));
  double points = 0, workloads = 0, boot = 0;
  int booted = 0;
  const auto& timed = t.contains("points") && t["points"].is_array() ? t["points"] : json::array();
  for (auto& p : timed) {
    points += field_or(p, "seconds", 0.0);
    workloads += field_or(p, "workload_s", 0.0);
    if (p.contains("boot_to_agent_s") && p["boot_to_agent_s"].is_number()) {
      boot += p["boot_to_agent_s"].get<double>();
      ++booted;
    }
  }
  parts.push_back(fmt::format("points {}", secs(points)));
  if (booted) parts.push_back(fmt::format("boot to agent {:.1f} s a point", boot / booted));
  if (workloads > 0) parts.push_back(fmt::format("workloads in the guests {}", secs(workloads)));
  parts.push_back(fmt::format("analysis {:.2f} s", field_or(t, "analysis_s", 0.0)));
  return join(parts, ", ");
}

std::string Builder::tool_line() const {
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

}  // namespace ks::report::detail

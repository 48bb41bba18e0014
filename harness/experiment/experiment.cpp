#include "experiment/experiment.hpp"

#include <algorithm>
#include <array>
#include <regex>
#include <set>

#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::experiment {

const std::vector<std::string> kWorkloadNames = {"clone", "dedupe", "dio-randwrite",
                                                 "buffered-write", "fio"};

std::string Workload::metric() const {
  if (name == "clone" || name == "dedupe") return "ns_per_op";
  if (name == "buffered-write") return "bytes_per_s";
  return "iops";
}

bool Workload::higher_is_better() const { return metric() != "ns_per_op"; }

namespace {

using nlohmann::json;

// Reads fields of one JSON object, remembering which keys were used, so unknown keys
// (usually typos) are reported instead of silently ignored.
class Reader {
 public:
  Reader(const json& j, std::string where) : j_(j), where_(std::move(where)) {
    if (!j.is_object()) fail("", "must be a JSON object");
  }

  [[noreturn]] void fail(const std::string& key, const std::string& problem,
                         const std::string& hint = {}) const {
    std::string at = key.empty() ? where_ : where_ + "/" + key;
    throw UserError("experiment: " + (at.empty() ? "/" : at) + ": " + problem,
                    hint.empty() ? "see results-schema/experiment.schema.json for the format"
                                 : hint);
  }

  const json* find(const std::string& key) {
    used_.insert(key);
    auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }

  template <typename T>
  void get(const std::string& key, T& out) {
    if (auto* v = find(key)) {
      try {
        out = v->get<T>();
      } catch (const json::exception&) {
        fail(key, "has the wrong type (" + std::string(v->type_name()) + ")");
      }
    }
  }

  template <typename T>
  void get_positive(const std::string& key, T& out) {
    if (auto* v = find(key)) {
      if (!v->is_number() || v->get<double>() <= 0)
        fail(key, "must be a number greater than zero, not " + v->dump());
      out = v->get<T>();
    }
  }

  void get_strings(const std::string& key, std::vector<std::string>& out) {
    if (auto* v = find(key)) {
      if (!v->is_array() || !std::all_of(v->begin(), v->end(), [](auto& e) { return e.is_string(); }))
        fail(key, "must be an array of strings");
      out = v->get<std::vector<std::string>>();
    }
  }

  void one_of(const std::string& key, const std::string& value,
              const std::vector<std::string>& allowed) const {
    if (std::find(allowed.begin(), allowed.end(), value) == allowed.end())
      fail(key, "'" + value + "' is not one of: " + join(allowed, ", "));
  }

  void reject_unknown() const {
    for (auto& [k, v] : j_.items())
      if (!used_.count(k) && !starts_with(k, "_") && k != "$schema" && k != "comment")
        fail(k, "unknown key", "remove it or check its spelling (keys starting with _ are comments)");
  }

  std::string at(const std::string& key) const { return where_ + "/" + key; }

 private:
  const json& j_;
  std::string where_;
  std::set<std::string> used_;
};

Workload parse_workload(const json& j, const std::string& where) {
  Workload w;
  Reader r(j, where);
  r.get("name", w.name);
  if (w.name.empty()) r.fail("name", "is required", "one of: " + join(kWorkloadNames, ", "));
  r.one_of("name", w.name, kWorkloadNames);
  r.get("label", w.label);
  r.get_positive("ops", w.ops);
  r.get_positive("range_bytes", w.range_bytes);
  if (w.range_bytes % 4096 != 0)
    r.fail("range_bytes", "must be a multiple of 4096 (the btrfs sector size)");
  r.get_positive("iodepth", w.iodepth);
  r.get_positive("jobs", w.jobs);
  r.get_positive("file_size_mib", w.file_size_mib);
  r.get_positive("runtime_s", w.runtime_s);
  r.get_positive("block_kib", w.block_kib);
  r.get_positive("size_mib", w.size_mib);
  r.get("job", w.fio_job);
  if (w.name == "fio" && w.fio_job.empty())
    r.fail("job", "is required for the fio workload", "name a job file in workloads/fio/, e.g. \"dio-randwrite.fio\"");
  r.reject_unknown();
  return w;
}

Storage parse_storage(const json& j, const std::string& where) {
  Storage s;
  Reader r(j, where);
  r.get("kind", s.kind);
  r.one_of("kind", s.kind, {"auto", "brd", "zram", "loop", "device", "nvme"});
  r.get_positive("size_mib", s.size_mib);
  r.get("device", s.device);
  r.get("allow_overwrite", s.allow_overwrite);
  r.get_strings("mkfs_options", s.mkfs_options);
  r.get_strings("mount_options", s.mount_options);
  if (s.kind == "device" && s.device.empty())
    r.fail("device", "is required when kind is \"device\"", "name the block device to format, e.g. \"/dev/nvme1n1\"");
  r.reject_unknown();
  return s;
}

Arm parse_arm(const std::string& name, const json& j, const std::string& where) {
  Arm a;
  a.name = name;
  Reader r(j, where);
  r.get_strings("patches", a.patches);
  r.get_strings("mkfs_options", a.extra_mkfs_options);
  r.get_strings("mount_options", a.extra_mount_options);
  r.get_strings("cmdline", a.cmdline);
  if (auto* sysfs = r.find("sysfs")) {
    if (!sysfs->is_object()) r.fail("sysfs", "must be an object of path -> value");
    for (auto& [path, value] : sysfs->items()) {
      if (!starts_with(path, "/sys/") && !starts_with(path, "/proc/sys/"))
        r.fail("sysfs", "'" + path + "' is not under /sys/ or /proc/sys/");
      if (!value.is_string() && !value.is_number())
        r.fail("sysfs", "the value for '" + path + "' must be a string or a number");
      a.sysfs[path] = value.is_string() ? value.get<std::string>() : value.dump();
    }
  }
  r.reject_unknown();
  return a;
}

}  // namespace

Experiment parse(const json& j) {
  Experiment e;
  e.raw = j;
  Reader r(j, "");
  r.get("name", e.name);
  if (e.name.empty()) r.fail("name", "is required", "give the experiment a short name");
  r.get("description", e.description);
  r.get("backend", e.backend);
  r.one_of("backend", e.backend, {"host", "qemu"});
  r.get("scheme", e.scheme);
  r.one_of("scheme", e.scheme, {"screen", "confirm"});
  r.get_strings("order", e.order);
  r.get_positive("blocks", e.blocks);
  r.get("seed", e.seed);
  r.get_positive("rounds", e.rounds);
  r.get("warmup_rounds", e.warmup_rounds);
  r.get("cpu", e.cpu);
  if (e.cpu < -1) r.fail("cpu", "must be a CPU number, or -1 for no pinning");
  r.get("continue_on_failure", e.continue_on_failure);
  r.get_positive("point_timeout_s", e.point_timeout_s);
  r.get("governor", e.governor);

  auto* workloads = r.find("workloads");
  if (!workloads || !workloads->is_array() || workloads->empty())
    r.fail("workloads", "must be a non-empty array", "e.g. [{\"name\": \"clone\", \"ops\": 10000}]");
  std::set<std::string> ids;
  for (size_t i = 0; i < workloads->size(); ++i) {
    e.workloads.push_back(parse_workload((*workloads)[i], "/workloads/" + std::to_string(i)));
    if (!ids.insert(e.workloads.back().id()).second)
      r.fail("workloads/" + std::to_string(i), "workload '" + e.workloads.back().id() + "' appears twice",
             "give one of them a distinct \"label\"");
  }

  if (auto* s = r.find("storage")) e.storage = parse_storage(*s, "/storage");
  if (e.backend == "host" && e.storage.kind == "nvme")
    r.fail("storage/kind", "nvme is an emulated drive of the qemu backend",
           "on the host name the drive with kind \"device\"");

  auto* arms = r.find("arms");
  if (!arms || !arms->is_object())
    r.fail("arms", "must be an object with the arms \"control\" and \"patched\"");
  for (auto& [name, arm] : arms->items()) {
    if (name != "control" && name != "patched")
      r.fail("arms/" + name, "unknown arm", "the arms are \"control\" and \"patched\"");
    e.arms[name] = parse_arm(name, arm, "/arms/" + name);
  }
  for (const char* needed : {"control", "patched"})
    if (!e.arms.count(needed)) r.fail("arms", std::string("has no \"") + needed + "\" arm");
  if (e.backend == "host")
    for (auto& [name, arm] : e.arms)
      if (!arm.patches.empty() || !arm.cmdline.empty())
        r.fail("arms/" + name, "patches and cmdline need a new kernel",
               "use \"backend\": \"qemu\", or vary only mkfs_options, mount_options and sysfs on the host");

  if (e.order.empty()) e.order = {"control", "patched", "control"};
  for (auto& arm : e.order)
    if (!e.arms.count(arm)) r.fail("order", "names an arm that does not exist: '" + arm + "'");
  if (e.scheme == "screen") {
    auto controls = std::count(e.order.begin(), e.order.end(), "control");
    if (controls < 2 || e.order.front() != "control" || e.order.back() != "control" ||
        std::count(e.order.begin(), e.order.end(), "patched") < 1)
      r.fail("order", "a screen is a sandwich: it starts and ends with control and has a patched point",
             "e.g. [\"control\", \"patched\", \"control\"]");
  }

  if (auto* src = r.find("source")) {
    Reader s(*src, "/source");
    s.get("kind", e.source.kind);
    s.one_of("kind", e.source.kind, {"debian", "tarball", "git"});
    s.get("path", e.source.path);
    s.get("commit", e.source.commit);
    if (e.source.kind != "debian" && e.source.path.empty())
      s.fail("path", "is required for a " + e.source.kind + " source");
    if (e.source.kind == "git" && e.source.commit.empty())
      s.fail("commit", "is required for a git source", "name a commit, tag or branch");
    s.reject_unknown();
  }
  if (auto* cfg = r.find("config")) {
    Reader c(*cfg, "/config");
    c.get("base", e.config.base);
    c.get_strings("fragments", e.config.fragments);
    c.reject_unknown();
  }
  if (e.config.fragments.empty()) e.config.fragments = {"btrfs-bench.config"};

  if (auto* g = r.find("gates")) {
    Reader gr(*g, "/gates");
    gr.get_positive("drift_bound_pct", e.gates.drift_bound_pct);
    gr.get_positive("material_pct", e.gates.material_pct);
    gr.reject_unknown();
  }
  if (auto* hits = r.find("direct_hits")) {
    if (!hits->is_array()) r.fail("direct_hits", "must be an array");
    for (size_t i = 0; i < hits->size(); ++i) {
      DirectHit d;
      Reader h((*hits)[i], "/direct_hits/" + std::to_string(i));
      h.get("function", d.function);
      if (d.function.empty()) h.fail("function", "is required");
      // A C identifier: the name goes into a regular expression and tracefs as it is.
      static const std::regex identifier("[A-Za-z_][A-Za-z0-9_]*");
      if (!std::regex_match(d.function, identifier))
        h.fail("function", "\"" + d.function + "\" is not a function name",
               "name the kernel function itself, e.g. btrfs_remap_file_range (its .isra/.constprop clones are counted with it)");
      h.get("required", d.required);
      h.get_strings("arms", d.arms);
      h.reject_unknown();
      e.direct_hits.push_back(d);
    }
  }
  if (auto* q = r.find("qemu")) {
    Reader qr(*q, "/qemu");
    qr.get_positive("memory_mib", e.qemu.memory_mib);
    qr.get_positive("vcpus", e.qemu.vcpus);
    qr.get("accel", e.qemu.accel);
    qr.one_of("accel", e.qemu.accel, {"auto", "kvm", "tcg"});
    qr.reject_unknown();
  }
  r.reject_unknown();
  return e;
}

Experiment parse_text(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& err) {
    throw UserError(origin + " is not valid JSON: " + err.what(),
                    "fix the syntax (a JSON linter such as `jq . FILE` shows where)");
  }
  return parse(j);
}

// splitmix64: fully specified, so a seed gives the same order on every machine.
static uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::vector<PlannedPoint> plan_points(const Experiment& e) {
  std::vector<PlannedPoint> points;
  if (e.scheme == "screen") {
    for (size_t i = 0; i < e.order.size(); ++i)
      points.push_back({static_cast<int>(i), 0, e.order[i]});
    return points;
  }
  uint64_t state = e.seed;
  for (uint32_t b = 0; b < e.blocks; ++b) {
    bool control_first = (splitmix64(state) >> 63) == 0;
    for (const char* arm : control_first ? std::array{"control", "patched"} : std::array{"patched", "control"})
      points.push_back({static_cast<int>(points.size()), static_cast<int>(b), arm});
  }
  return points;
}

}  // namespace ks::experiment

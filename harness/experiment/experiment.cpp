#include "experiment/experiment.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <regex>
#include <cstring>
#include <set>

#include "experiment/backends.hpp"
#include "experiment/strict_json.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/ownership.hpp"

namespace ks::experiment {

const std::vector<std::string> kWorkloadNames = {"clone", "dedupe", "dio-randwrite",
                                                 "buffered-write", "fio"};
const std::vector<std::string> kClockRequests = {"auto", "time", "instructions"};

std::string Workload::metric() const {
  if (name == "clone" || name == "dedupe") return "ns_per_op";
  if (name == "buffered-write") return "bytes_per_s";
  return "iops";
}

bool higher_is_better(const std::string& metric) { return metric != "ns_per_op"; }

bool Workload::higher_is_better() const { return experiment::higher_is_better(metric()); }

bool patched_at_later_commit(const Experiment& e) {
  auto it = e.arms.find("patched");
  return it != e.arms.end() && !it->second.commit.empty();
}

bool is_plain_name(const std::string& s) {
  static const std::regex name("[A-Za-z0-9._-]{1,64}");
  return s.size() <= 64 && s != "." && s != ".." && std::regex_match(s, name);
}

bool is_clean_knob_path(const std::string& path) {
  if (path.find('\0') != std::string::npos) return false;
  std::string rest;
  if (starts_with(path, "/sys/")) rest = path.substr(5);
  else if (starts_with(path, "/proc/sys/")) rest = path.substr(10);
  else return false;
  if (rest.empty()) return false;
  for (auto& part : split(rest, '/'))
    if (part.empty() || part == "." || part == "..") return false;
  return true;
}

namespace {

using nlohmann::json;
namespace b = bounds;

// Where an experiment may set a knob: the tunables of memory, filesystems, the scheduler, block
// queues, btrfs and CPUs, never a knob that names a program the kernel runs as root
// (kernel/core_pattern, kernel/modprobe, fs/binfmt_misc, uevent_helper), removes a device or
// weakens a protection. A path matches an entry when it starts with its prefix and holds its
// part (if any) after it; the host checks the knob's resolved path as well (a /sys path can
// lead elsewhere through links), where a block queue is under /sys/devices/.
struct KnobPlace {
  const char* prefix;
  const char* then;  // a part the rest must hold ("" for none)
};
constexpr KnobPlace kKnobPlaces[] = {
    // Memory: writeback, reclaim and the caches, not the reserves or the OOM policy (an
    // experiment that sets panic_on_oom and a million huge pages could panic the machine).
    {"/proc/sys/vm/dirty_", ""}, {"/proc/sys/vm/drop_caches", ""}, {"/proc/sys/vm/swappiness", ""},
    {"/proc/sys/vm/vfs_cache_pressure", ""}, {"/proc/sys/vm/stat_interval", ""},
    {"/proc/sys/vm/compaction_proactiveness", ""}, {"/proc/sys/vm/watermark_", ""},
    {"/proc/sys/vm/zone_reclaim_mode", ""}, {"/proc/sys/vm/page-cluster", ""},
    {"/sys/kernel/mm/transparent_hugepage/", ""},
    {"/proc/sys/kernel/sched_", ""},   {"/proc/sys/kernel/numa_balancing", ""},
    {"/proc/sys/kernel/timer_migration", ""}, {"/proc/sys/kernel/nmi_watchdog", ""},
    {"/proc/sys/fs/aio-max-nr", ""},          {"/proc/sys/fs/file-max", ""},
    {"/sys/block/", "/queue/"},    {"/sys/devices/", "/queue/"},      {"/sys/fs/btrfs/", ""},
    // CPUs: frequency and idle states, never a CPU's `online` or SMT (a CPU taken away; SMT
    // forced off cannot be turned on again before a reboot), microcode or hotplug.
    {"/sys/devices/system/cpu/cpufreq/", ""}, {"/sys/devices/system/cpu/cpuidle/", ""},
    {"/sys/devices/system/cpu/intel_pstate/", ""}, {"/sys/devices/system/cpu/", "/cpufreq/"},
    {"/sys/devices/system/cpu/", "/cpuidle/"},
    {"/sys/module/btrfs/parameters/", ""},
    {"/sys/module/brd/parameters/", ""}, {"/sys/module/zram/parameters/", ""}, {"/sys/module/loop/parameters/", ""}};

}  // namespace

bool is_tunable_knob(const std::string& path) {
  for (auto& place : kKnobPlaces)
    if (starts_with(path, place.prefix) && path.find(place.then, std::strlen(place.prefix)) != std::string::npos)
      return true;
  return false;
}

namespace {

std::string knob_places() {
  std::string out;
  for (auto& place : kKnobPlaces)
    out += (out.empty() ? "" : ", ") + std::string(place.prefix) + (*place.then ? std::string("*") + place.then : "");
  return out;
}

bool ends_with_fio(const std::string& s) { return s.size() > 4 && s.compare(s.size() - 4, 4, ".fio") == 0; }

std::string number_text(long double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15Lg", v);
  return buf;
}

// Reads fields of one JSON object, remembering which keys were used, so unknown keys
// (usually typos) are reported instead of silently ignored.
class Reader {
 public:
  Reader(const json& j, std::string where) : j_(j), where_(std::move(where)) {
    if (!j.is_object()) fail("", "must be a JSON object, not " + std::string(j.type_name()));
  }

  [[noreturn]] void fail(const std::string& key, const std::string& problem,
                         const std::string& hint = {}) const {
    std::string at = key.empty() ? where_ : where_ + "/" + key;
    throw UserError("experiment: " + (at.empty() ? "/" : at) + ": " + problem,
                    hint.empty() ? "see results-schema/experiment.schema.json for the format"
                                 : hint);
  }

  bool has(const std::string& key) const { return j_.contains(key); }

  // A key that is there. null is not "absent": the schema refuses it, and so does this.
  const json* find(const std::string& key) {
    used_.insert(key);
    auto it = j_.find(key);
    if (it == j_.end()) return nullptr;
    if (it->is_null()) fail(key, "is null", "leave the key out to get its default, or give a value");
    return &*it;
  }

  void get(const std::string& key, std::string& out) {
    if (auto* v = find(key)) {
      if (!v->is_string()) fail(key, "must be a string, not " + std::string(v->type_name()));
      out = v->get<std::string>();
    }
  }

  void get(const std::string& key, bool& out) {
    if (auto* v = find(key)) {
      if (!v->is_boolean()) fail(key, "must be true or false, not " + v->dump());
      out = v->get<bool>();
    }
  }

  // A whole number in [lo, hi]. 2.5 is refused (not rounded), 1e30 and -1 for an unsigned
  // field are refused (not wrapped). 3.0 is a whole number, as the schema says.
  template <typename T>
  void get_integer(const std::string& key, T& out, long long lo, unsigned long long hi) {
    auto* v = find(key);
    if (!v) return;
    const std::string range = "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
    __int128 value = 0;
    if (v->is_number_unsigned()) {
      value = v->get<uint64_t>();
    } else if (v->is_number_integer()) {
      value = v->get<int64_t>();
    } else if (v->is_number_float()) {
      double d = v->get<double>();
      if (!std::isfinite(d) || d != std::floor(d)) fail(key, "must be " + range + ", not " + v->dump());
      if (std::fabs(d) > 1e19) fail(key, "must be " + range + ", not " + v->dump() + " (out of range)");
      value = static_cast<__int128>(d);
    } else {
      fail(key, "must be " + range + ", not " + std::string(v->type_name()) + " " + v->dump());
    }
    if (value < lo || value > static_cast<__int128>(hi))
      fail(key, "must be " + range + ", not " + v->dump() + " (out of range)");
    out = static_cast<T>(value);
  }

  // A number above LO (or at least LO when LO_INCLUSIVE) and at most HI.
  void get_number(const std::string& key, double& out, double lo, bool lo_inclusive, double hi) {
    auto* v = find(key);
    if (!v) return;
    std::string range = "a number " + std::string(lo_inclusive ? "from " : "greater than ") +
                        number_text(lo) + (lo_inclusive ? " to " : " and at most ") + number_text(hi);
    if (!v->is_number()) fail(key, "must be " + range + ", not " + std::string(v->type_name()) + " " + v->dump());
    double d = v->get<double>();
    if (!std::isfinite(d) || (lo_inclusive ? d < lo : d <= lo) || d > hi)
      fail(key, "must be " + range + ", not " + v->dump() + " (out of range)");
    out = d;
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

  // KEY is only meaningful when WHAT is one of APPLIES_TO; elsewhere it would be silently
  // ignored, which hides a mistake.
  void only_for(const std::string& key, const std::string& what_key, const std::string& what,
                const std::vector<std::string>& applies_to) const {
    if (has(key) && std::find(applies_to.begin(), applies_to.end(), what) == applies_to.end())
      fail(key, "does not apply when " + what_key + " is \"" + what + "\"",
           "remove it; it applies only when " + what_key + " is " + join(applies_to, " or "));
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

// mkfs.btrfs takes devices as positional words: a word that is not an option or an
// option's value would be formatted too. The harness sets the label (it marks what it
// made) and copies nothing into the filesystem.
// The mkfs.btrfs options an experiment may pass: a list of what is allowed, never of what is
// not. getopt takes bundled letters (-fr/dir is -f -r /dir) and any unambiguous prefix of a
// long name (--ro= is --rootdir=), so anything but these exact spellings is refused: the
// harness labels what it makes, copies nothing into it, and needs mkfs to make a filesystem.
struct MkfsOption {
  char letter;       // 0: long only
  const char* name;  // without "--"
  bool takes_value;
};
constexpr MkfsOption kMkfsOptions[] = {
    {'b', "byte-count", true}, {'c', "checksum", true}, {0, "csum", true},        {'d', "data", true},
    {'m', "metadata", true},   {'n', "nodesize", true}, {'s', "sectorsize", true}, {'O', "features", true},
    {'R', "runtime-features", true}, {'U', "uuid", true}, {0, "device-uuid", true}, {0, "compress", true},
    {'K', "nodiscard", false}, {'M', "mixed", false},    {'f', "force", false},     {'q', "quiet", false}};

void check_mkfs_options(Reader& r, const std::string& key, const std::vector<std::string>& options) {
  std::string allowed;
  for (auto& o : kMkfsOptions)
    allowed += (allowed.empty() ? "" : ", ") + (o.letter ? std::string("-") + o.letter + "/" : "") + "--" + o.name;
  auto refuse = [&](const std::string& word, const std::string& why) {
    r.fail(key, "\"" + word + "\" " + why,
           "give each option alone and spelt in full, with its value as the next word or after '=' "
           "(e.g. [\"-n\", \"16384\", \"--features=no-holes\"]); allowed: " + allowed);
  };
  for (size_t i = 0; i < options.size(); ++i) {
    const auto& word = options[i];
    const MkfsOption* option = nullptr;
    std::optional<std::string> value;  // given in the same word
    for (auto& o : kMkfsOptions) {
      const std::string long_name = std::string("--") + o.name;
      if (word == long_name || (o.letter && word == std::string("-") + o.letter)) option = &o;
      else if (o.takes_value && starts_with(word, long_name + "=")) option = &o, value = word.substr(long_name.size() + 1);
      else if (o.takes_value && o.letter && word.size() > 2 && word[0] == '-' && word[1] == o.letter)
        option = &o, value = word.substr(2);
      if (option) break;
    }
    if (!option) {
      if (!starts_with(word, "-") || word == "-" || word == "--")
        refuse(word, "is not an option: mkfs.btrfs would take it as another device to format");
      refuse(word, "is not an option the harness passes to mkfs.btrfs (or is several letters in one word, or "
                   "a long name cut short)");
    }
    if (option->takes_value && !value) {
      if (i + 1 >= options.size()) refuse(word, "needs a value after it");
      value = options[++i];
    }
    // A feature list naming list-all makes mkfs.btrfs print the features and make nothing.
    if (option->letter == 'O' || option->letter == 'R')
      for (auto& feature : split(*value, ','))
        if (feature == "list-all" || feature == "list")
          r.fail(key, "the feature list \"" + *value + "\" holds " + feature +
                          ": mkfs.btrfs would list the features and make no filesystem",
                 "name the features to turn on, e.g. [\"-O\", \"no-holes\"]");
  }
}

// Mount options are btrfs's own; not mount(8)'s userspace ones (X-mount.mode and .owner would
// open the benchmark filesystem, X-mount.mkdir make directories), nor another device for
// btrfs to join (device=), nor security contexts.
// What mount_options may name: btrfs's own options (Documentation/filesystems/btrfs) and the
// generic flags of time stamps, syncing and permissions on the test filesystem. Not mount(8)'s
// own (bind, remount, loop=, offset=, helper=, X-*), not device= or security contexts, not
// suid/dev/exec.
constexpr std::string_view kMountOptionNames[] = {
    "acl", "noacl", "autodefrag", "noautodefrag", "barrier", "nobarrier", "clear_cache", "commit", "compress",
    "compress-force", "datacow", "nodatacow", "datasum", "nodatasum", "degraded", "discard", "nodiscard",
    "enospc_debug", "noenospc_debug", "fatal_errors", "flushoncommit", "noflushoncommit", "fragment",
    "max_inline", "metadata_ratio", "nologreplay", "norecovery", "ref_verify", "rescan_uuid_tree", "rescue",
    "skip_balance", "space_cache", "nospace_cache", "ssd", "nossd", "ssd_spread", "nossd_spread", "subvol",
    "subvolid", "thread_pool", "treelog", "notreelog", "usebackuproot", "user_subvol_rm_allowed",
    "atime", "noatime", "relatime", "norelatime", "strictatime", "nostrictatime", "lazytime", "nolazytime",
    "diratime", "nodiratime", "iversion", "noiversion", "sync", "async", "dirsync", "rw", "nosuid", "nodev",
    "noexec"};

void check_mount_options(Reader& r, const std::string& key, const std::vector<std::string>& options) {
  for (auto& o : options) {
    const auto name = lower(o.substr(0, o.find('=')));
    if (std::find(std::begin(kMountOptionNames), std::end(kMountOptionNames), name) == std::end(kMountOptionNames) ||
        o.find(',') != std::string::npos)
      r.fail(key, "\"" + o + "\" is not a mount option the harness passes",
             "give btrfs's own options or the atime/sync flags, one to an entry, e.g. [\"noatime\", \"compress=zstd:1\"]");
  }
}

Workload parse_workload(const json& j, const std::string& where) {
  Workload w;
  Reader r(j, where);
  r.get("name", w.name);
  if (w.name.empty()) r.fail("name", "is required", "one of: " + join(kWorkloadNames, ", "));
  r.one_of("name", w.name, kWorkloadNames);
  r.get("label", w.label);
  if (r.has("label") && !is_plain_name(w.label))
    r.fail("label", "\"" + w.label + "\" is not a plain name; it names the workload's directory on the mount",
           "use 1 to 64 of A-Z a-z 0-9 . _ - (not \".\" or \"..\"), e.g. \"clone-64k\"");
  const std::vector<std::string> remap = {"clone", "dedupe"}, io = {"dio-randwrite", "fio"},
                                 buffered = {"buffered-write"}, fio = {"fio"};
  for (auto* key : {"ops", "range_bytes"}) r.only_for(key, "name", w.name, remap);
  for (auto* key : {"iodepth", "jobs", "file_size_mib", "runtime_s"}) r.only_for(key, "name", w.name, io);
  r.only_for("ios", "name", w.name, {"dio-randwrite"});
  for (auto* key : {"block_kib", "size_mib"}) r.only_for(key, "name", w.name, buffered);
  r.only_for("job", "name", w.name, fio);
  r.get_integer("ops", w.ops, 1, b::kMaxOps);
  r.get_integer("range_bytes", w.range_bytes, 4096, b::kMaxRangeBytes);
  if (w.range_bytes % 4096 != 0)
    r.fail("range_bytes", "must be a multiple of 4096 (the btrfs sector size)");
  r.get_integer("iodepth", w.iodepth, 1, b::kMaxIodepth);
  r.get_integer("jobs", w.jobs, 1, b::kMaxJobs);
  r.get_integer("file_size_mib", w.file_size_mib, 1, b::kMaxMib);
  r.get_number("runtime_s", w.runtime_s, b::kMinRuntimeS, true, b::kMaxRuntimeS);
  r.get_integer("ios", w.ios, 1, b::kMaxOps);
  if (r.has("ios") && r.has("runtime_s"))
    r.fail("ios", "and runtime_s both say when a round ends",
           "give ios (writes per round: the same work every round) or runtime_s (seconds per round), not both");
  r.get_integer("block_kib", w.block_kib, 1, b::kMaxBlockKib);
  r.get_integer("size_mib", w.size_mib, 1, b::kMaxMib);
  if (w.name == "buffered-write" && w.size_mib * 1024 % w.block_kib != 0)
    r.fail("size_mib", "must be a whole number of block_kib blocks (" + std::to_string(w.size_mib) +
                           " MiB in blocks of " + std::to_string(w.block_kib) + " KiB)");
  r.get("job", w.fio_job);
  if (w.name == "fio" && w.fio_job.empty())
    r.fail("job", "is required for the fio workload", "name a job file in workloads/fio/, e.g. \"dio-randwrite.fio\"");
  if (w.name == "fio" && (!is_plain_name(w.fio_job) || !ends_with_fio(w.fio_job)))
    r.fail("job", "\"" + w.fio_job + "\" is not the name of a job file in workloads/fio/",
           "name a file in workloads/fio/ without a directory, e.g. \"dio-randwrite.fio\"");
  r.reject_unknown();
  return w;
}

Storage parse_storage(const json& j, const std::string& where) {
  Storage s;
  Reader r(j, where);
  r.get("kind", s.kind);
  r.one_of("kind", s.kind, {"auto", "brd", "zram", "loop", "device", "nvme"});
  r.only_for("device", "kind", s.kind, {"device"});
  // brd: a /dev/ram0 the harness did not make is formatted only with allow_overwrite.
  r.only_for("allow_overwrite", "kind", s.kind, {"device", "brd"});
  r.only_for("size_mib", "kind", s.kind, {"auto", "brd", "zram", "loop", "nvme"});
  r.get_integer("size_mib", s.size_mib, b::kMinStorageMib, b::kMaxMib);
  r.get("device", s.device);
  r.get("allow_overwrite", s.allow_overwrite);
  r.get_strings("mkfs_options", s.mkfs_options);
  check_mkfs_options(r, "mkfs_options", s.mkfs_options);
  r.get_strings("mount_options", s.mount_options);
  check_mount_options(r, "mount_options", s.mount_options);
  if (s.kind == "device" && s.device.empty())
    r.fail("device", "is required when kind is \"device\"", "name the block device to format, e.g. \"/dev/nvme1n1\"");
  r.reject_unknown();
  return s;
}

Arm parse_arm(const std::string& name, const json& j, const std::string& where) {
  Arm a;
  a.name = name;
  Reader r(j, where);
  r.get("commit", a.commit);
  r.get_strings("patches", a.patches);
  r.get_strings("mkfs_options", a.extra_mkfs_options);
  check_mkfs_options(r, "mkfs_options", a.extra_mkfs_options);
  r.get_strings("mount_options", a.extra_mount_options);
  check_mount_options(r, "mount_options", a.extra_mount_options);
  r.get_strings("cmdline", a.cmdline);
  if (auto* sysfs = r.find("sysfs")) {
    if (!sysfs->is_object()) r.fail("sysfs", "must be an object of path -> value");
    for (auto& [path, value] : sysfs->items()) {
      if (!is_clean_knob_path(path))
        r.fail("sysfs", "'" + path + "' is not a plain path under /sys/ or /proc/sys/",
               "write the knob's absolute path without \".\", \"..\" or \"//\", e.g. "
               "\"/sys/block/loop0/queue/read_ahead_kb\"");
      if (!is_tunable_knob(path))
        r.fail("sysfs", "'" + path + "' is not a knob an experiment may set",
               "set tunables under " + knob_places());
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
  check_json_tree(j, "experiment");
  Experiment e;
  e.raw = j;
  Reader r(j, "");
  r.get("name", e.name);
  if (e.name.empty()) r.fail("name", "is required", "give the experiment a short name");
  if (!is_plain_name(e.name))  // results/<name>, <name>-<sha12>.json: never a path
    r.fail("name", "\"" + e.name + "\" is not a plain name; it names files and directories",
           "use 1 to 64 of A-Z a-z 0-9 . _ - (not \".\" or \"..\"), e.g. \"btrfs-clone\"");
  r.get("description", e.description);
  r.get("backend", e.backend);
  r.one_of("backend", e.backend, backend_names());
  const auto& backend = backend_rules(e.backend);
  r.get("scheme", e.scheme);
  r.one_of("scheme", e.scheme, {"screen", "confirm"});
  r.get_strings("order", e.order);
  if (r.has("order") && e.order.size() < 3)
    r.fail("order", "needs at least 3 points", "e.g. [\"control\", \"patched\", \"control\"]");
  if (e.order.size() > b::kMaxOrder)
    r.fail("order", "holds more than " + std::to_string(b::kMaxOrder) + " points", "a confirm run (\"scheme\": \"confirm\") sizes a long comparison");
  r.get_integer("blocks", e.blocks, 1, b::kMaxBlocks);
  r.get_integer("seed", e.seed, 0, b::kMaxSafeInteger);
  r.get_integer("rounds", e.rounds, 1, b::kMaxRounds);
  r.get_integer("warmup_rounds", e.warmup_rounds, 0, b::kMaxRounds);
  r.get_integer("cpu", e.cpu, -1, b::kMaxCpu);
  r.get("continue_on_failure", e.continue_on_failure);
  r.get_integer("point_timeout_s", e.point_timeout_s, 1, b::kMaxPointTimeoutS);
  r.get("governor", e.governor);
  r.get("clock", e.clock);
  r.one_of("clock", e.clock, kClockRequests);
  if (e.clock == "instructions" && !backend.instruction_clock)
    r.fail("clock", "\"instructions\" needs a guest under QEMU TCG, which the " + e.backend + " backend does not boot",
           "use \"time\" (or \"auto\") here, or \"backend\": \"qemu\" for a deterministic instruction clock");
  r.get_number("target_mde_pct", e.target_mde_pct, 0, false, b::kMaxPct);
  r.get_integer("min_blocks", e.min_blocks, b::kMinSequentialBlocks, b::kMaxSequentialBlocks);
  r.get_integer("max_blocks", e.max_blocks, b::kMinSequentialBlocks, b::kMaxSequentialBlocks);
  r.get_integer("replacement_blocks", e.replacement_blocks, 0, b::kMaxSequentialBlocks);
  if (e.max_blocks < e.min_blocks)
    r.fail("max_blocks", "(" + std::to_string(e.max_blocks) + ") is less than min_blocks (" +
                             std::to_string(e.min_blocks) + ")",
           "raise max_blocks or lower min_blocks");

  auto* workloads = r.find("workloads");
  if (!workloads || !workloads->is_array() || workloads->empty())
    r.fail("workloads", "must be a non-empty array", "e.g. [{\"name\": \"clone\", \"ops\": 10000}]");
  if (workloads->size() > kMaxWorkloads)
    r.fail("workloads", "holds more than " + std::to_string(kMaxWorkloads) + " workloads",
           "split it into several experiments");
  std::set<std::string> ids;
  for (size_t i = 0; i < workloads->size(); ++i) {
    e.workloads.push_back(parse_workload((*workloads)[i], "/workloads/" + std::to_string(i)));
    if (!ids.insert(e.workloads.back().id()).second)
      r.fail("workloads/" + std::to_string(i), "workload '" + e.workloads.back().id() + "' appears twice",
             "give one of them a distinct \"label\"");
    // A gate's scope names a workload, a point or one of these: a workload of that name took
    // the builds' gate from every other (forty-fourth attack).
    for (const char* scope : {"builds", "experiment"})
      if (e.workloads.back().id() == scope)
        r.fail("workloads/" + std::to_string(i), "workload '" + std::string(scope) + "' has a name the run's gates use",
               "give it another \"label\"");
  }

  if (auto* s = r.find("storage")) e.storage = parse_storage(*s, "/storage");
  if (std::find(backend.storage_kinds.begin(), backend.storage_kinds.end(), e.storage.kind) ==
      backend.storage_kinds.end())
    r.fail("storage/kind", "\"" + e.storage.kind + "\" is not available on the " + e.backend + " backend",
           backend.storage_hint);

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
  if (!backend.boots_kernels)
    for (auto& [name, arm] : e.arms)
      if (!arm.patches.empty() || !arm.cmdline.empty() || !arm.commit.empty())
        r.fail("arms/" + name, "commit, patches and cmdline need a new kernel",
               "use a backend that boots the arms' kernels (\"backend\": \"qemu\"), or vary only "
               "mkfs_options, mount_options and sysfs on the " + e.backend + " backend");
  // Knobs are written on the host backend only: a guest or a kexec'd kernel would not see
  // them, and a key that would be ignored is refused.
  if (backend.boots_kernels)
    for (auto& [name, arm] : e.arms)
      if (!arm.sysfs.empty())
        r.fail("arms/" + name + "/sysfs", "knobs are set on the host backend only",
               "set a kernel parameter with the arm's cmdline on the " + e.backend + " backend, or remove sysfs");
  if (!e.arms.at("control").commit.empty())
    r.fail("arms/control/commit", "the control arm is built from source.commit",
           "set \"source\": {\"commit\": ...} for the baseline and arms.patched.commit for the tip");

  if (e.order.empty()) e.order = {"control", "patched", "control"};
  for (auto& arm : e.order)
    if (!e.arms.count(arm)) r.fail("order", "names an arm that does not exist: '" + arm + "'");
  if (e.scheme == "screen") {
    // A screen is a sandwich, or an A/A run of the control arm alone (what `calibrate` runs).
    auto controls = std::count(e.order.begin(), e.order.end(), "control");
    bool aa = controls == static_cast<long>(e.order.size());
    if (!aa && (controls < 2 || e.order.front() != "control" || e.order.back() != "control" ||
                std::count(e.order.begin(), e.order.end(), "patched") < 1))
      r.fail("order",
             "a screen is a sandwich: it starts and ends with control and has a patched point "
             "(or is all control: an A/A run)",
             "e.g. [\"control\", \"patched\", \"control\"]");
  }

  if (auto* src = r.find("source")) {
    Reader s(*src, "/source");
    s.get("kind", e.source.kind);
    s.one_of("kind", e.source.kind, {"debian", "tarball", "git"});
    s.only_for("path", "kind", e.source.kind, {"tarball", "git"});
    s.only_for("commit", "kind", e.source.kind, {"git"});
    s.get("path", e.source.path);
    s.get("commit", e.source.commit);
    if (e.source.kind != "debian" && e.source.path.empty())
      s.fail("path", "is required for a " + e.source.kind + " source");
    if (e.source.kind == "git" && e.source.commit.empty())
      s.fail("commit", "is required for a git source", "name a commit, tag or branch");
    if (starts_with(e.source.commit, "-"))
      s.fail("commit", "must not start with '-' (git would take it as an option)", "name a commit, tag or branch");
    s.reject_unknown();
  }
  if (auto& tip = e.arms.at("patched").commit; !tip.empty()) {
    if (e.source.kind != "git")
      r.fail("arms/patched/commit", "needs a git source",
             "set \"source\": {\"kind\": \"git\", \"path\": ..., \"commit\": BASELINE}");
    if (starts_with(tip, "-"))
      r.fail("arms/patched/commit", "must not start with '-' (git would take it as an option)",
             "name a commit, tag or branch");
  }
  if (auto* cfg = r.find("config")) {
    Reader c(*cfg, "/config");
    c.get("base", e.config.base);
    c.get_strings("fragments", e.config.fragments);
    c.reject_unknown();
  }
  if (e.config.fragments.empty()) e.config.fragments = {"btrfs-bench.config"};

  if (auto* c = r.find("claim")) {
    Reader cr(*c, "/claim");
    Claim claim;
    cr.get("thread", claim.thread);
    cr.get("figure", claim.figure);
    cr.get("needs", claim.needs);
    cr.get_integer("parallel_cpus", claim.parallel_cpus, 1, b::kMaxClaimCpus);
    for (auto [key, value] : {std::pair{"thread", &claim.thread}, {"figure", &claim.figure}})
      if (value->empty()) cr.fail(key, "is required", "quote the thread's subject and the figure it measured");
    if (claim.parallel_cpus > 1 && claim.needs.empty())
      cr.fail("needs", "is required with parallel_cpus above 1", "say in words what the effect needs, e.g. several writers contending for the inode lock");
    cr.reject_unknown();
    e.claim = claim;
  }
  if (auto* g = r.find("gates")) {
    Reader gr(*g, "/gates");
    gr.get_number("drift_bound_pct", e.gates.drift_bound_pct, 0, false, b::kMaxPct);
    gr.get_number("material_pct", e.gates.material_pct, 0, false, b::kMaxPct);
    gr.reject_unknown();
  }
  r.get("profile", e.profile);
  if (e.profile && !backend.boots_kernels)
    r.fail("profile", "is for a kernel the run boots (the guest's init profiles after the rounds); the " + e.backend +
                          " backend measures the running kernel",
           "leave \"profile\" out here, or use \"backend\": \"qemu\" or \"baremetal\"");
  if (auto* hits = r.find("direct_hits")) {
    if (!hits->is_array()) r.fail("direct_hits", "must be an array");
    if (hits->size() > kMaxDirectHits)
      r.fail("direct_hits", "holds more than " + std::to_string(kMaxDirectHits) + " functions",
             "count the functions the patch changes");
    std::set<std::string> counted;
    for (size_t i = 0; i < hits->size(); ++i) {
      DirectHit d;
      Reader h((*hits)[i], "/direct_hits/" + std::to_string(i));
      h.get("function", d.function);
      if (d.function.empty()) h.fail("function", "is required");
      // A C identifier: the name goes into a regular expression and tracefs as it is.
      // Checked by hand: std::regex recurses per character and a long name (a hostile file)
      // overflowed the stack. 512 is the kernel's KSYM_NAME_LEN.
      auto word = [](char c) { return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
      bool identifier = d.function.size() <= 512 && !(d.function[0] >= '0' && d.function[0] <= '9') &&
                        std::all_of(d.function.begin(), d.function.end(), word);
      if (!identifier)
        h.fail("function", "\"" + (d.function.size() > 64 ? d.function.substr(0, 64) + "..." : d.function) +
                               "\" is not a function name",
               "name the kernel function itself, e.g. btrfs_remap_file_range (its .isra/.constprop clones are counted with it)");
      if (!counted.insert(d.function).second)
        h.fail("function", "\"" + d.function + "\" is counted twice", "name each function once");
      h.get("required", d.required);
      h.get_strings("arms", d.arms);
      for (auto& arm : d.arms)
        if (arm != "control" && arm != "patched")
          h.fail("arms", "'" + arm + "' is not an arm", "the arms are \"control\" and \"patched\"");
      h.reject_unknown();
      e.direct_hits.push_back(d);
    }
  }
  if (auto* q = r.find("qemu")) {
    Reader qr(*q, "/qemu");
    qr.get_integer("memory_mib", e.qemu.memory_mib, b::kMinQemuMemoryMib, b::kMaxMib);
    qr.get_integer("vcpus", e.qemu.vcpus, 1, b::kMaxVcpus);
    qr.get("accel", e.qemu.accel);
    qr.one_of("accel", e.qemu.accel, {"auto", "kvm", "tcg"});
    if (e.clock == "instructions" && e.qemu.vcpus > 1)
      qr.fail("vcpus", "must be 1 for the instruction clock: under QEMU's -icount a second vCPU never comes up",
              "set \"vcpus\": 1, or \"clock\": \"auto\" to time several vCPUs in wall time");
    if (e.clock == "instructions" && e.qemu.accel == "kvm")
      qr.fail("accel", "\"kvm\" cannot count instructions: the instruction clock is QEMU TCG's",
              "drop qemu.accel (the instruction clock runs under TCG) or set \"clock\": \"time\"");
    qr.reject_unknown();
  }
  if (backend.has_section)
    if (auto* section = r.find(e.backend)) {
      if (!section->is_object()) r.fail(e.backend, "must be an object");
      e.backend_section = *section;
    }
  r.reject_unknown();
  return e;
}

Experiment parse_text(const std::string& text, const std::string& origin) {
  return parse(parse_json_strict(text, origin));
}

Experiment parse_file(const std::filesystem::path& path) {
  require_trusted_input(path, "experiment");
  return parse_text(read_input_file(path, kMaxInputBytes, "experiment file"), path.string());
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
  for (uint32_t b = 0; b < e.blocks + e.replacements; ++b) {
    bool control_first = (splitmix64(state) >> 63) == 0;
    for (const char* arm : control_first ? std::array{"control", "patched"} : std::array{"patched", "control"})
      points.push_back({static_cast<int>(points.size()), static_cast<int>(b), arm});
  }
  return points;
}

}  // namespace ks::experiment

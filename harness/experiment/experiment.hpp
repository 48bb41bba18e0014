#pragma once
// The experiment file, parsed and validated. Pure: takes JSON text, returns values or
// throws UserError naming the offending field and what to write instead.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ks::experiment {

// One workload and its parameters as the agent takes them.
struct Workload {
  std::string name;          // clone | dedupe | dio-randwrite | buffered-write | fio
  uint64_t ops = 10000;      // clone/dedupe: ioctls per round
  uint64_t range_bytes = 4096;
  uint32_t iodepth = 64;     // dio-randwrite / fio
  uint32_t jobs = 1;         // dio-randwrite / fio: threads, each its own ring
  uint64_t file_size_mib = 256;
  double runtime_s = 5;      // dio-randwrite / fio: time-based rounds
  uint64_t block_kib = 1024; // buffered-write block size
  uint64_t size_mib = 256;   // buffered-write bytes per round
  std::string fio_job;       // fio: job file name under workloads/fio/
  std::string label;         // how reports name it; defaults to name

  std::string metric() const;          // ns_per_op | iops | bytes_per_s
  bool higher_is_better() const;
  std::string id() const { return label.empty() ? name : label; }
};

// Storage for every point: a RAM device the harness creates, or a device the user hands over.
struct Storage {
  std::string kind = "auto";  // auto | brd | zram | loop | device (| nvme for qemu)
  uint64_t size_mib = 1024;
  std::string device;         // kind == device: the block device to format
  bool allow_overwrite = false;
  std::vector<std::string> mkfs_options;
  std::vector<std::string> mount_options;
};

// Kernel source and build (used by the build and qemu stages).
struct KernelSource {
  std::string kind = "debian";  // debian | tarball | git
  std::string path;             // tarball or git tree
  std::string commit;           // git
};

struct KernelConfig {
  std::string base = "tinyconfig";      // tinyconfig | defconfig | path to a .config
  std::vector<std::string> fragments;   // under configs/kernel/ or paths
};

// What one arm is. On the host backend arms may differ only by what needs no new kernel.
struct Arm {
  std::string name;
  std::vector<std::string> patches;       // kernel-patches/*.patch or mbox paths
  std::vector<std::string> extra_mkfs_options;
  std::vector<std::string> extra_mount_options;
  std::map<std::string, std::string> sysfs;  // absolute /sys or /proc/sys path -> value
  std::vector<std::string> cmdline;        // extra kernel command line words (qemu)
};

struct Gates {
  double drift_bound_pct = 5.0;   // |control drift| above this is INVALID
  double material_pct = 1.0;      // an effect at least this large is "material"
};

struct DirectHit {
  std::string function;
  bool required = false;
  std::vector<std::string> arms;  // empty: every arm
};

struct Experiment {
  std::string name;
  std::string description;
  std::string backend = "host";   // host | qemu
  std::string scheme = "screen";  // screen | confirm
  std::vector<std::string> order; // screen: arm names in order (default control, patched, control)
  uint32_t blocks = 6;            // confirm: blocks of both arms in seeded random order
  uint64_t seed = 1;
  uint32_t rounds = 15;
  uint32_t warmup_rounds = 0;     // run and recorded, but excluded from statistics
  int cpu = -1;                   // CPU to pin the workload (and the vCPU thread) to; -1 none
  bool continue_on_failure = true;
  std::vector<Workload> workloads;
  Storage storage;
  std::map<std::string, Arm> arms;  // "control" and "patched"
  KernelSource source;
  KernelConfig config;
  Gates gates;
  std::vector<DirectHit> direct_hits;
  uint32_t point_timeout_s = 900;  // one point (boot + all workloads) must finish within
  std::string governor;            // cpufreq governor for the pinned CPU during points; "" leaves it
  struct Qemu {
    uint32_t memory_mib = 2048;
    uint32_t vcpus = 1;
    std::string accel = "auto";  // auto (KVM if a probe guest runs, else TCG) | kvm | tcg
  } qemu;

  nlohmann::json raw;  // the file as given, kept in the bundle
};

// Throws UserError("experiment: <json pointer>: <problem>", "<what to do>").
Experiment parse(const nlohmann::json& j);
Experiment parse_text(const std::string& text, const std::string& origin);

// The realised order of points: arm name per point. Screen: `order`; confirm: `blocks`
// blocks, each both arms in an order drawn from `seed`. Deterministic.
struct PlannedPoint {
  int index = 0;
  int block = 0;
  std::string arm;
};
std::vector<PlannedPoint> plan_points(const Experiment& e);

extern const std::vector<std::string> kWorkloadNames;

}  // namespace ks::experiment

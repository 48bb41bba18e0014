#pragma once
// The experiment file, parsed and validated. Pure: takes JSON text, returns values or
// throws UserError naming the offending field and what to write instead.
#include <cstdint>
#include <filesystem>
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
  uint64_t ios = 0;          // dio-randwrite: writes per round, all jobs together (count-based
                             // rounds: the same work every round); 0: time-based, runtime_s
  uint64_t block_kib = 1024; // buffered-write block size
  uint64_t size_mib = 256;   // buffered-write bytes per round
  std::string fio_job;       // fio: a job file name in workloads/fio/ (a name, never a path)
  std::string label;         // how reports name it and its directory on the mount; defaults
                             // to name. A name, never a path: see is_plain_name().

  std::string metric() const;          // ns_per_op | iops | bytes_per_s
  bool higher_is_better() const;       // higher_is_better(metric())
  std::string id() const { return label.empty() ? name : label; }
};

// Whether more of METRIC is better: a time per op is not, a rate is.
bool higher_is_better(const std::string& metric);

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
  std::string commit;  // git source, patched arm: built as source.commit + `git diff source.commit commit`
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

// What a mailing-list thread claimed, for an experiment that reproduces it: the report
// puts the thread's figure beside the verdict and says when this run could not show it.
struct Claim {
  std::string thread;  // where it was said: the thread's subject (and seed)
  std::string figure;  // what was measured there, and on what
  std::string needs;   // what the effect needs to appear, in words
  // CPUs running the workload at once that the effect needs (lock contention, work handed
  // to other CPUs); 1: a CPU-path effect that any run can show.
  uint32_t parallel_cpus = 1;
};

struct Experiment {
  std::string name;
  std::string description;
  std::optional<Claim> claim;
  std::string backend = "host";   // a name in backend_table() (experiment/backends.hpp)
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
  // After the measured rounds of a point, an unmeasured pass per workload under ftrace's
  // function profiler over the filesystem's paths (trace/profile.hpp): calls and own time per
  // op of each function, compared between the arms beside the verdict (analysis/profile.hpp).
  bool profile = false;
  // confirm: how many blocks a sequential confirm may run, and the effect it must be able
  // to see. A screen accepts and ignores them.
  double target_mde_pct = 5.0;     // > 0: the minimum detectable effect (%) to plan for
  uint32_t min_blocks = 3;         // >= 2
  uint32_t max_blocks = 12;        // >= min_blocks, <= 100
  // confirm: a block left out of the analysis (a failed point, a point disturbed throughout)
  // is replaced by a new block at the end of the plan, at most this many times a run. The
  // looks count whole blocks, and dropping does not depend on the measured effect, so the
  // boundaries stay valid; replacements keep the power the run was sized for.
  uint32_t replacement_blocks = 2;  // <= 100
  uint32_t replacements = 0;        // of a run: blocks added so far (its plan records them)
  uint32_t point_timeout_s = 900;  // one point (boot + all workloads) must finish within
  std::string governor;            // cpufreq governor for the pinned CPU during points; "" leaves it
  // What a round is timed with (evidence/clock.hpp names what was used): "time" is wall
  // time; "instructions" QEMU TCG's instruction-count clock (deterministic; the qemu backend
  // only, which then never uses KVM; one vCPU); "auto" instructions where a one-vCPU guest runs
  // under TCG (its wall time is an emulation artefact), else wall time (several vCPUs, KVM,
  // real hardware).
  std::string clock = "auto";
  struct Qemu {
    uint32_t memory_mib = 2048;
    uint32_t vcpus = 1;
    std::string accel = "auto";  // auto (KVM when a probe boot proves it works, else TCG) | kvm | tcg
  } qemu;
  // The section named after the backend when its rules say it has one ("baremetal": {...}),
  // as written: that backend reads and checks it (boot::Backend::check_experiment).
  nlohmann::json backend_section;

  nlohmann::json raw;  // the file as given, kept in the bundle
};

// Throws UserError("experiment: <json pointer>: <problem>", "<what to do>").
Experiment parse(const nlohmann::json& j);
Experiment parse_text(const std::string& text, const std::string& origin);
// The experiment file PATH, read bounded (no FIFO, device or huge file), then parse_text.
Experiment parse_file(const std::filesystem::path& path);

// The realised order of points: arm name per point. Screen: `order`; confirm: `blocks`
// blocks, each both arms in an order drawn from `seed`. Deterministic.
struct PlannedPoint {
  int index = 0;
  int block = 0;
  std::string arm;
};
std::vector<PlannedPoint> plan_points(const Experiment& e);

// Whether the patched arm is a later commit of a git source (arms.patched.commit): then, and
// only then, may the matched-build audit let the two configs and releases differ.
bool patched_at_later_commit(const Experiment& e);

extern const std::vector<std::string> kWorkloadNames;
extern const std::vector<std::string> kClockRequests;  // auto | time | instructions

// Workloads in one experiment, and so in one bundle: each is a section, a table and a plot of
// every report.
inline constexpr size_t kMaxWorkloads = 64;
// Functions whose calls a run counts (direct_hits): each is a gate of every point a reader
// judges again (forty-third attack: 100,000 of them in a 257 KB bundle cost readers 35 s and
// more than a gigabyte).
inline constexpr size_t kMaxDirectHits = 64;

// A name that is safe as one path component: [A-Za-z0-9._-]{1,64}, not "." or "..".
// Workload labels (directories on the mount) and fio job names must be one.
bool is_plain_name(const std::string& s);

// A /sys or /proc/sys path written lexically clean: absolute, under /sys/ or /proc/sys/, no
// "." or ".." component, no empty component, no NUL. (Symlinks are resolved where the knob
// is written: boot/knobs.hpp.)
bool is_clean_knob_path(const std::string& path);
// Whether an experiment may set the knob at PATH (lexical or resolved): a tunable of memory,
// the scheduler, block queues, btrfs or CPUs, never one that makes the kernel run a program,
// removes a device or weakens a protection (experiment.cpp's table).
bool is_tunable_knob(const std::string& path);

// Numeric bounds of the experiment, the same ones results-schema/experiment.schema.json
// states (a unit test keeps the two in step).
namespace bounds {
constexpr uint64_t kMaxSafeInteger = 9007199254740991ULL;  // 2^53 - 1: exact in every JSON reader
constexpr uint32_t kMaxBlocks = 100;  // = kMaxSequentialBlocks: every block is a look
constexpr uint32_t kMaxOrder = 2 * kMaxBlocks;  // a screen's points, as many as a confirm's
constexpr uint32_t kMaxRounds = 100000;
constexpr int kMaxCpu = 1023;                 // CPU_SETSIZE - 1
constexpr uint32_t kMaxPointTimeoutS = 604800;  // a week
constexpr uint64_t kMaxOps = 1000000000;
constexpr uint64_t kMaxRangeBytes = 1ULL << 30;
constexpr uint32_t kMaxIodepth = 4096;        // the agent's limit
constexpr uint32_t kMaxJobs = 1024;           // the agent's limit
constexpr uint64_t kMaxMib = 1048576;         // 1 TiB
constexpr double kMinRuntimeS = 0.01, kMaxRuntimeS = 86400;  // the agent's limits
constexpr uint64_t kMaxBlockKib = 1048576;
constexpr uint64_t kMinStorageMib = 128;
constexpr uint32_t kMinQemuMemoryMib = 256;
constexpr uint32_t kMaxVcpus = 256;
constexpr uint32_t kMaxClaimCpus = 1024;  // claim.parallel_cpus
constexpr double kMaxPct = 100;
constexpr uint32_t kMinSequentialBlocks = 3, kMaxSequentialBlocks = 100;  // a look needs 2 df
}  // namespace bounds

}  // namespace ks::experiment

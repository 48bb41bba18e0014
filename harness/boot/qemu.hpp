#pragma once
// The QEMU backend: boots the arm's bzImage with the run's hermetic initramfs, and takes
// the guest's records and exit status from a virtio-serial port (never from the console,
// which is saved as the point's log). KVM when a probe guest ran under it (boot/accel.hpp),
// TCG otherwise; the bundle says which and why.
//
// The pure pieces (command line, kernel command line, the guest's plan, parsing what came
// back, judging the point) are free functions so unit tests pin them down; QemuBackend
// only adds the side effects: the initramfs, the NVMe backing file, running QEMU.
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "boot/accel.hpp"
#include "boot/backend.hpp"
#include "boot/initramfs.hpp"
#include "evidence/clock.hpp"
#include "experiment/experiment.hpp"
#include "trace/profile.hpp"

namespace ks::boot {

// ---- The QEMU command line, as data -------------------------------------------------

struct QemuSpec {
  std::string qemu = "qemu-system-x86_64";
  bool kvm = false;            // accel=kvm and -cpu host; else accel=tcg and -cpu max
  bool icount = false;         // TCG only: -icount shift=0,sleep=off, the instruction clock
  uint32_t vcpus = 1;
  uint32_t memory_mib = 2048;
  fs::path kernel;
  fs::path initrd;
  std::string cmdline;
  fs::path console_log;        // the serial console, saved as the point's log
  fs::path results;            // the results port's host side
  std::optional<fs::path> nvme_image;  // an emulated NVMe drive backed by this file
  int pin_cpu = -1;            // host CPU for every QEMU thread (taskset -c), -1: not pinned
};

std::vector<std::string> qemu_argv(const QemuSpec& spec);

// A value inside a QEMU option list (-drive file=...,if=none): commas doubled.
std::string qemu_option_value(std::string_view value);

// ---- What the guest runs ------------------------------------------------------------

// The device the guest formats: brd (/dev/ram0, sized on the kernel command line), an
// emulated NVMe drive (/dev/nvme0n1), or (bare metal) the device the experiment names.
// "auto" is brd. Throws UserError for other kinds.
struct GuestStorage {
  std::string kind;    // brd | nvme
  std::string device;  // inside the guest
};
GuestStorage guest_storage(const experiment::Storage& storage);

// Throws UserError when the guest cannot hold the experiment's storage: a kind other than
// brd or nvme, or a brd larger than the guest's memory leaves room for.
void check_guest_fits(const experiment::Experiment& e);

// The kernel command line: console on ttyS0, panic=-1 (a panic ends QEMU through
// -no-reboot), preempt=none, random.trust_cpu=on, the brd size, then the arm's own words
// (last wins).
std::string guest_cmdline(const experiment::Experiment& e, const experiment::Arm& arm);

// /ksandwich/plan.sh: the device, mkfs and mount options, one agent argv per workload
// built by agent_argv with paths inside the guest, and the direct-hit pass (the functions
// to count on this arm and the short workloads to count them over) or, with "profile",
// the profiling pass in its place. Every word single-quoted.
// CLOCK: what the rounds are timed with; a deterministic one runs the agent without its CPU
// canary. AGENT_CPU: the CPU the agent pins itself to there; unset, guest_cpu(E) (a
// bare-metal test kernel runs on the machine's own CPUs: E's cpu itself).
std::string guest_plan(const experiment::Experiment& e, const experiment::Arm& arm, const evidence::Clock& clock,
                       std::optional<int> agent_cpu = std::nullopt);

// The CPU the agent pins itself to inside the guest: the last vCPU when the experiment
// pins (the experiment's CPU is a host CPU: it pins the QEMU process), else -1.
int guest_cpu(const experiment::Experiment& e);

// guest/init.sh, embedded at build time.
const std::string& guest_init_script();

// What a point's hermetic initramfs holds (initramfs.hpp): busybox, the agent, mkfs.btrfs,
// fio and its libraries only when a workload runs it (~35 MB), the fio jobs, guest/init.sh
// and PLAN. The same for a QEMU guest and a bare-metal test kernel. Throws UserError when a
// program is missing.
InitramfsSpec guest_initramfs_spec(const experiment::Experiment& e, const BackendOptions& options,
                                   const std::string& plan);

// ---- What comes back ----------------------------------------------------------------

struct GuestReport {
  nlohmann::json guest;    // the "guest" record: what the kernel runs with; null if none
  nlohmann::json storage;  // the "storage" record: the fresh filesystem read back
  std::vector<nlohmann::json> agent_records;  // the agent's lines, each with "workload_id"
  std::optional<int> exit_status;             // the "exit" record
  std::string exit_reason;
  std::optional<double> agent_start_uptime_s;  // guest uptime when the first agent started
  std::optional<double> workloads_done_uptime_s;  // ... when the last timed workload ended
  std::optional<double> exit_uptime_s;
  // The direct hits: tracefs texts as the guest read them ("text" records) and the
  // method it used ("trace" record); with a profiling pass, its counts are in `profiles`.
  // Absent when the plan traced nothing.
  std::optional<trace::TraceCapture> trace;
  // The profiling pass: per workload, a "profile" record (the agent's exit status) and the
  // "text" records of files "profile:<id>:agent" and "profile:<id>:function<cpu>".
  std::vector<trace::ProfileCapture> profiles;
  std::optional<std::string> kernel_log;  // the guest's dmesg at the end ("text" records)
  std::optional<std::string> console;     // bare metal: what init printed ("text" records)
  int unreadable_lines = 0;  // not JSON (e.g. the last line cut by a kill)
};

// Parses the results port's stream (JSON lines). Pure.
GuestReport parse_guest_results(std::string_view text);

// The guest record turned into the point's environment fields: kernel_release,
// kernel_cmdline, preemption (the mode in parentheses), clocksource, ... Pure.
nlohmann::json guest_environment(const nlohmann::json& guest_record);

// How much of what a guest writes (its results port, its console; QEMU's own log) the host
// reads back: far beyond a real point's, so that a kernel flooding them costs no more memory.
inline constexpr size_t kMaxGuestResultsBytes = size_t(64) << 20;
inline constexpr size_t kMaxConsoleBytes = size_t(16) << 20;

struct GuestRun {
  GuestReport report;
  std::string console;
  bool timed_out = false;
  uint32_t timeout_s = 0;
  int qemu_exit_code = 0;   // -1 when killed by a signal
  std::string qemu_output;  // QEMU's own stdout/stderr
  std::string expected_release;  // empty: not checked
};

// Why the point failed, or nullopt when it did not: a panic on the console, a timeout,
// a guest that never reported, a jiffies clocksource, an unexpected kernel release, no
// exit record, a non-zero exit status, QEMU failing. Pure.
std::optional<std::string> guest_failure(const GuestRun& run);

// The last LINES lines of the console, for the bundle. Pure.
std::string console_tail(std::string_view console, size_t lines = 40);

// Console lines that show the guest kernel in trouble (WARNING:, BUG:, Oops, panic). Pure.
std::vector<std::string> console_findings(std::string_view console);

// Guest uptime at each step (init reported, filesystem ready, agent started, workloads done,
// exit): where a slow boot spends its time. Pure.
nlohmann::json guest_timeline(const GuestReport& report);

// What came back made into the point's result (release, the agent's records, the storage
// read back, kernel health, direct hits, why it failed), the same for a QEMU guest and a
// bare-metal test kernel: both run guest/init.sh. The backend adds its environment. Pure.
PointResult guest_point_result(const PointContext& context, const GuestRun& run, const GuestStorage& storage,
                               const fs::path& console_log);

// ---- The backend --------------------------------------------------------------------

class QemuBackend : public Backend {
 public:
  explicit QemuBackend(BackendOptions options);
  std::string name() const override { return "qemu"; }
  void preflight(const std::optional<fs::path>& control_kernel) override;
  void check_machine(const experiment::Experiment& e) const override;
  nlohmann::json machine() override;
  bool undisturbed_clock() const override;
  PointResult run_point(const PointContext& context) override;
  // The QEMU command and the guest plan of the point.
  std::string describe_point(const PointContext& context) const override;

 private:
  QemuSpec spec_for(const PointContext& context, const fs::path& initrd,
                    const std::optional<fs::path>& nvme_image) const;
  const Initramfs& initramfs_for(const PointContext& context, const std::string& plan);
  // Decided on first use (never by --dry-run): the probe runs QEMU.
  const AccelChoice& accel(const std::optional<fs::path>& kernel = std::nullopt);
  // The clock the points are timed with (evidence/clock.hpp), from the accelerator decided
  // (or, for --dry-run, the one shown) and the experiment's request.
  const evidence::Clock& clock() const;
  // The accelerator asked of the probe: the instruction clock is TCG's.
  std::string requested_accel() const;

  BackendOptions options_;
  std::optional<AccelChoice> accel_;
  bool accel_kernel_probed_ = false;  // decided by booting a kernel, not the firmware alone
  std::map<std::string, Initramfs> initramfs_by_plan_;  // built once per run (per plan)
};

}  // namespace ks::boot

#pragma once
// Which accelerator QEMU gets: KVM only when a guest really ran under it.
//
// A /dev/kvm that opens proves nothing: under nested virtualization KVM_CREATE_VM and
// KVM_CREATE_VCPU succeed, yet QEMU with -cpu host aborts ("failed to set MSR 0x10a"), or
// runs real-mode code but hangs a Linux guest at 100% CPU without a line on the console
// (seen on this project's own machines). So there are two probes with the points' own
// -machine and -cpu options:
//  - the firmware probe (~0.1 s, no kernel needed): a 64 KiB firmware whose reset vector
//    writes one byte to isa-debug-exit; QEMU exits with (byte << 1) | 1 only if a vCPU ran;
//  - the kernel probe (~1 s under KVM): the run's own bzImage with no initramfs, panic=-1
//    and -no-reboot, so a kernel that boots prints its banner, panics for want of a root
//    filesystem and ends QEMU. A kernel that has not done that in 30 s is not running.
// `run` decides with the kernel probe; `doctor` with a kernel from the cache when it has
// one, else the firmware probe. Answers are remembered per host kernel, KVM device, QEMU
// binary and probe (the kernel probe: per kernel image).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ks::boot {

namespace fs = std::filesystem;

struct AccelChoice {
  std::string accel;       // kvm | tcg: what the points run with
  std::string requested;   // auto | kvm | tcg: what the experiment asked for
  std::string reason;      // one sentence: why this accelerator
  std::string kvm_probe;   // the KVM probe's outcome ("ran a guest", QEMU's message, ...); empty: not probed
  bool remembered = false; // the probe's answer came from the cache
};

// The probe's firmware image: 64 KiB of zeros whose last 16 bytes (the reset vector at
// 0xFFFFFFF0) hold `mov al, 0x2a; out 0xf4, al; hlt`. Pure.
std::string probe_firmware();
constexpr int kProbeExitCode = (0x2a << 1) | 1;  // 85

// The probe's QEMU command line: the same -machine and -cpu as a point. Pure.
std::vector<std::string> probe_argv(const std::string& qemu, const std::string& accel,
                                    const fs::path& firmware);

// The -cpu model of an accelerator: host under KVM, max under TCG. Pure.
std::string cpu_model(const std::string& accel);

// The kernel probe's QEMU command line. Pure.
std::vector<std::string> kernel_probe_argv(const std::string& qemu, const std::string& accel,
                                           const fs::path& kernel, const fs::path& console);

// Runs (or recalls) a KVM probe and decides: the kernel probe with KERNEL, else the firmware
// probe. requested "tcg": TCG, no probe. "auto": KVM if the probe's guest ran, else TCG with
// the reason. "kvm": KVM, or UserError carrying QEMU's own message when the probe failed.
// CACHE_DIR holds the remembered answers (none when empty). Throws UserError when QEMU is
// missing.
AccelChoice choose_accel(const std::string& requested, const fs::path& cache_dir,
                         const std::optional<fs::path>& kernel = std::nullopt);

}  // namespace ks::boot

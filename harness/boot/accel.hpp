#pragma once
// Which accelerator QEMU gets: KVM only when a probe guest really ran under it.
//
// A /dev/kvm that opens proves nothing: under nested virtualization KVM_CREATE_VM and
// KVM_CREATE_VCPU succeed, yet QEMU with -cpu host aborts ("failed to set MSR 0x10a") or
// starts a guest that never runs. So the probe starts QEMU with the points' own -machine
// and -cpu options on a 64 KiB firmware whose reset vector writes one byte to
// isa-debug-exit: QEMU exits with (byte << 1) | 1 if and only if a vCPU executed guest
// code. It takes ~0.1 s; the answer is remembered per host kernel and QEMU binary.
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

// Runs (or recalls) the KVM probe and decides. requested "tcg": TCG, no probe. "auto": KVM
// if the probe ran a guest, else TCG with the reason. "kvm": KVM, or UserError carrying
// QEMU's own message when the probe failed. CACHE_DIR holds the remembered answers (none
// when empty). Throws UserError when QEMU is missing.
AccelChoice choose_accel(const std::string& requested, const fs::path& cache_dir);

}  // namespace ks::boot

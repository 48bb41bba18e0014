// What `ksandwich doctor` says about bare metal: whether this machine can switch kernels
// with kexec_file_load, and what to do about each thing that stands in the way.
#include <filesystem>

#include "boot/baremetal/baremetal.hpp"
#include "boot/baremetal/kexec.hpp"
#include "util/files.hpp"

namespace ks::boot::baremetal {

namespace fs = std::filesystem;

std::vector<machine::Check> doctor_checks() {
  std::vector<machine::Check> checks;
  auto add = [&checks](std::string name, bool ok, std::string detail, std::string fix) {
    checks.push_back({std::move(name), ok, false, false, std::move(detail), std::move(fix), true});
  };
  auto why = kexec::unavailable();
  add("kexec (bare metal)", !why, why ? *why : "kexec_file_load permitted",
      "the lab kernel needs CONFIG_KEXEC_FILE, kernel.kexec_load_disabled = 0 (it stays 1 until a reboot) and the "
      "doctor run as root");
  auto lockdown = trim(read_first_line("/sys/kernel/security/lockdown", "[none] (no lockdown file)"));
  bool unlocked = lockdown.starts_with("[none]");
  add("lockdown (bare metal)", unlocked, lockdown,
      "under lockdown kexec takes only kernels signed by a trusted key (CONFIG_KEXEC_SIG): sign the arms' "
      "kernels and enroll the key (mokutil), or turn Secure Boot off on the lab machine");
  // The SecureBoot EFI variable: 4 bytes of attributes, then 1 when enabled.
  auto sb = try_read_file("/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d0-a2e0-00a0c94d55ad");
  bool secure_boot = sb && sb->size() >= 5 && (*sb)[4] == 1;
  add("Secure Boot (bare metal)", !secure_boot,
      !sb ? "no EFI SecureBoot variable (BIOS boot or not exposed)" : secure_boot ? "enabled" : "disabled",
      "Secure Boot locks the kernel down: see the lockdown line");
  bool hardware = false;
  std::error_code ec;
  for (auto& entry : fs::directory_iterator("/sys/class/watchdog", ec)) {
    (void)entry;
    hardware = true;
  }
  add("watchdog (bare metal)", true,
      std::string("the test kernels arm softdog (CONFIG_SOFT_WATCHDOG) for point_timeout_s") +
          (hardware ? "; this kernel also has a watchdog device" : ""),
      "");
  bool hook = fs::exists("/etc/systemd/system/" + std::string(kUnitName));
  add("boot hook (bare metal)", hook, hook ? std::string("/etc/systemd/system/") + kUnitName : "not installed",
      "ksandwich baremetal install (a systemd unit that goes on with a run after each switch)");
  return checks;
}

}  // namespace ks::boot::baremetal

#pragma once
// The bare-metal backend: `ksandwich run` runs on the lab machine's own kernel and, for
// each point, kexecs the machine into the arm's kernel with the run's hermetic initramfs
// (the QEMU guest's: busybox, agent, mkfs.btrfs, guest/init.sh). The point's records come
// back on the results device; the machine comes back by kexec or a reboot, and the boot
// hook (`ksandwich baremetal install`) goes on with the run. See switch.hpp for the steps.
#include <map>
#include <optional>
#include <string>

#include "boot/backend.hpp"
#include "boot/baremetal/switch.hpp"
#include "boot/initramfs.hpp"
#include "machine/doctor.hpp"

namespace ks::boot::baremetal {

// Where the run waiting for the boot hook is registered ("pending": its directory):
// $KSANDWICH_BAREMETAL_STATE, else /var/lib/ksandwich/baremetal. On the lab machine's
// disk: it must survive the switch. For root, no one else may change it or a directory on
// the way (util's untrusted_on_the_way): throws UserError saying who could.
fs::path state_dir();
// The run directory registered there, "" when none: a small regular file, never read through
// a link or from a FIFO (UserError otherwise).
std::string pending_run();

// `ksandwich doctor`'s bare-metal lines (doctor.cpp): kexec_file_load permitted, lockdown,
// Secure Boot, the watchdog, the boot hook.
std::vector<machine::Check> doctor_checks();

class BaremetalBackend : public Backend {
 public:
  explicit BaremetalBackend(BackendOptions options);
  ~BaremetalBackend() override;
  std::string name() const override { return "baremetal"; }
  void check_experiment(const experiment::Experiment& e) override;
  void check_machine(const experiment::Experiment& e) const override;
  void preflight(const std::optional<fs::path>& control_kernel) override;
  nlohmann::json machine() override;
  // The first call for a point switches the machine out and does not return; the call
  // after the switch back (the resumed run) collects, fails or reruns the point.
  PointResult run_point(const PointContext& context) override;
  std::string describe_point(const PointContext& context) const override;

 private:
  [[noreturn]] void switch_out(const PointContext& context, int attempt, const std::string& started_at,
                               double first_switched_at);
  PointResult collect(const PointContext& context, const Switch& s, uint64_t bytes) const;
  PointResult failed(const Switch& s, const std::string& why) const;
  const Initramfs& initramfs_for(const PointContext& context, const std::string& plan);
  std::string lab_cmdline() const;
  std::string lab_kernel() const;
  std::optional<std::string> lab_initrd() const;
  // A named drive's identity for the test kernel to find it by ("" for RAM storage).
  std::string storage_identity(const experiment::Experiment& e) const;
  void check_results_device(const PointContext& context) const;

  BackendOptions options_;
  Options bm_;  // the experiment's section, read by check_experiment
  std::map<std::string, Initramfs> initramfs_by_plan_;
  fs::path bundle_dir_;  // the run this backend serves, once a point ran
};

}  // namespace ks::boot::baremetal

#pragma once
// Every read of /proc and /sys that describes the machine lives here; the rest of the
// harness takes the values. The noise controls are read back, never assumed.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace ks::machine {

// Once per bundle: CPU model, cores, memory, virtualization, kernel, clocksource, ...
nlohmann::json describe_host();

// Per point: what was in force (cpu, governor, turbo, SMT, preemption, cmdline,
// clocksource, load average, free memory). `cpu` is the pinned CPU or -1.
nlohmann::json read_environment(int cpu);

// Preemption mode from debugfs (e.g. "none"), nullopt when it cannot be read.
std::optional<std::string> preemption_mode();
std::string clocksource();
std::string kernel_release();
// The KVM device node: $KSANDWICH_KVM_DEVICE, else /dev/kvm. Tests point it at a node that
// opens but runs nothing (/dev/null) to play a broken KVM on any machine.
std::string kvm_device();
bool have_kvm();         // the KVM device exists and can be opened read-write (no proof it works)
bool have_io_uring();    // io_uring_setup works for this process
bool have_filesystem(const std::string& name);  // listed in /proc/filesystems

// Sets CPU's cpufreq governor while the object lives and puts the old one back. Where the
// machine has no cpufreq (typical in a VM) or refuses the write, nothing changes and
// describe() says so: {"requested", "set": false, "reason"} or {"requested", "set": true,
// "value": read back, "previous"}. An empty request does nothing and describes as null.
class GovernorSetting {
 public:
  GovernorSetting(int cpu, std::string wanted);
  ~GovernorSetting();
  GovernorSetting(const GovernorSetting&) = delete;
  GovernorSetting& operator=(const GovernorSetting&) = delete;
  const nlohmann::json& describe() const { return described_; }

 private:
  std::string path_, previous_;
  uint64_t journaled_ = 0;  // util/journal: the write, with the old bytes
  nlohmann::json described_;
};

// Fields of two environments that should be equal between points but are not:
// "governor: performance vs powersave". Pure.
std::vector<std::string> environment_differences(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace ks::machine

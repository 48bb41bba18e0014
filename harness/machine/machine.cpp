#include "machine/machine.hpp"

#include <fcntl.h>
#include <linux/io_uring.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "util/files.hpp"
#include "util/hash.hpp"
#include "util/journal.hpp"
#include "util/progress.hpp"

namespace ks::machine {
namespace {

using nlohmann::json;

const char* kCpuSys = "/sys/devices/system/cpu";

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (starts_with(line, "model name")) return trim(line.substr(line.find(':') + 1));
  return "unknown";
}

bool cpu_has_flag(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (starts_with(line, "flags")) return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}

uint64_t meminfo_kib(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);)
    if (starts_with(line, key + ":")) return std::stoull(trim(line.substr(key.size() + 1)));
  return 0;
}

json or_null(const std::optional<std::string>& v) { return v ? json(*v) : json(); }

std::optional<std::string> read_sys(const std::string& path) {
  auto v = try_read_file(path);
  if (!v) return std::nullopt;
  return trim(*v);
}

// Turbo: intel_pstate says no_turbo, acpi-cpufreq says boost; absent in most VMs.
json turbo() {
  if (auto v = read_sys(std::string(kCpuSys) + "/intel_pstate/no_turbo")) return *v == "0";
  if (auto v = read_sys(std::string(kCpuSys) + "/cpufreq/boost")) return *v == "1";
  return json();
}

}  // namespace

std::string kernel_release() {
  utsname u{};
  uname(&u);
  return u.release;
}

std::string clocksource() {
  return read_first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource", "unknown");
}

std::optional<std::string> preemption_mode() {
  // "none voluntary (full)": the mode in force is the one in parentheses.
  auto v = read_sys("/sys/kernel/debug/sched/preempt");
  if (!v) return std::nullopt;
  auto open = v->find('('), close = v->find(')');
  if (open == std::string::npos || close == std::string::npos) return *v;
  return v->substr(open + 1, close - open - 1);
}

std::string kvm_device() {
  const char* device = getenv("KSANDWICH_KVM_DEVICE");
  return device && *device ? device : "/dev/kvm";
}

bool have_kvm() {
  int fd = open(kvm_device().c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  close(fd);
  return true;
}

bool have_io_uring() {
  io_uring_params p{};
  long fd = syscall(__NR_io_uring_setup, 1, &p);
  if (fd < 0) return false;
  close(static_cast<int>(fd));
  return true;
}

bool have_filesystem(const std::string& name) {
  std::ifstream in("/proc/filesystems");
  for (std::string line; std::getline(in, line);)
    if (trim(line.substr(line.find('\t') + 1)) == name) return true;
  return false;
}

json describe_host() {
  return {{"cpu_model", cpu_model()},
          {"cores", std::thread::hardware_concurrency()},
          {"memory_mib", meminfo_kib("MemTotal") / 1024},
          {"hypervisor", cpu_has_flag("hypervisor")},
          {"kvm_available", have_kvm()},
          {"kernel_release", kernel_release()},
          {"kernel_cmdline", read_first_line("/proc/cmdline")},
          {"clocksource", clocksource()},
          {"preemption", or_null(preemption_mode())},
          {"smt_active", or_null(read_sys(std::string(kCpuSys) + "/smt/active"))}};
}

json read_environment(int cpu) {
  json env{{"cpu", cpu},
           {"kernel_release", kernel_release()},
           {"kernel_cmdline", read_first_line("/proc/cmdline")},
           {"clocksource", clocksource()},
           {"preemption", or_null(preemption_mode())},
           {"turbo", turbo()},
           {"smt_active", or_null(read_sys(std::string(kCpuSys) + "/smt/active"))},
           {"loadavg", read_first_line("/proc/loadavg")},
           {"mem_available_mib", meminfo_kib("MemAvailable") / 1024}};
  std::string cpu_dir = std::string(kCpuSys) + "/cpu" + std::to_string(cpu < 0 ? 0 : cpu);
  env["governor"] = or_null(read_sys(cpu_dir + "/cpufreq/scaling_governor"));
  env["smt_siblings"] = or_null(read_sys(cpu_dir + "/topology/thread_siblings_list"));
  return env;
}

GovernorSetting::GovernorSetting(int cpu, std::string wanted) {
  if (wanted.empty()) return;
  path_ = std::string(kCpuSys) + "/cpu" + std::to_string(cpu < 0 ? 0 : cpu) + "/cpufreq/scaling_governor";
  described_ = {{"requested", wanted}, {"set", false}};
  auto previous = read_sys(path_);
  auto previous_bytes = try_read_file(path_);
  if (!previous || !previous_bytes) {
    described_["reason"] = "no cpufreq on this machine (" + path_ + " does not exist)";
    path_.clear();
    return;
  }
  journaled_ = journal::record("knob", {{"path", path_}, {"old_hex", hex(*previous_bytes)},
                                       {"value", wanted}, {"what", "cpufreq governor"}});
  try {
    write_file(path_, wanted);
  } catch (const std::exception& e) {
    journal::record_undone(journaled_);
    described_["reason"] = std::string("the kernel refused it: ") + e.what();
    path_.clear();
    return;
  }
  previous_ = *previous;
  described_["set"] = true;
  described_["previous"] = previous_;
  described_["value"] = or_null(read_sys(path_));
}

GovernorSetting::~GovernorSetting() {
  if (path_.empty()) return;
  try {
    write_file(path_, previous_);
    journal::record_undone(journaled_);
  } catch (const std::exception& e) {
    progress::say("warning: could not put the governor back in " + path_ + ": " + e.what());
  }
}

std::vector<std::string> environment_differences(const json& a, const json& b) {
  // Load and free memory move by nature; everything else should be equal across points.
  static const char* kShouldMatch[] = {"cpu", "clocksource", "preemption", "turbo",
                                       "smt_active", "governor", "kernel_cmdline"};
  // tsc-early and tsc read the same counter: a guest read before the kernel finished
  // checking the TSC still says tsc-early, which is no difference in what is measured.
  auto same_counter = [](json v) {
    if (v.is_string() && v.get<std::string>() == "tsc-early") v = "tsc";
    return v;
  };
  // A bare-metal switch puts its own slot (a nonce) on each test kernel's command line.
  auto without_slot = [](json v) {
    if (!v.is_string()) return v;
    std::vector<std::string> kept;
    for (auto& word : split(v.get<std::string>(), ' '))
      if (!starts_with(word, "ksandwich.slot=")) kept.push_back(word);
    return json(join(kept, " "));
  };
  std::vector<std::string> out;
  for (const char* key : kShouldMatch) {
    json va = a.value(key, json()), vb = b.value(key, json());
    if (std::string_view(key) == "clocksource") va = same_counter(va), vb = same_counter(vb);
    if (std::string_view(key) == "kernel_cmdline") va = without_slot(va), vb = without_slot(vb);
    if (va != vb) out.push_back(std::string(key) + ": " + va.dump() + " vs " + vb.dump());
  }
  return out;
}

}  // namespace ks::machine

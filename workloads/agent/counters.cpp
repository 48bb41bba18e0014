#include "agent/counters.hpp"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace ks::agent {
namespace {

int open_counter(uint64_t config) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = config;
  attr.disabled = 1;
  attr.inherit = 1;     // threads started after this count too
  attr.exclude_hv = 1;  // the kernel's work for the round counts, the hypervisor's not
  return static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
}

std::string why(int err) {
  std::string what = std::string("perf_event_open: ") + std::strerror(err);
  if (err == ENOENT || err == EOPNOTSUPP || err == ENODEV)
    return what + " (no hardware PMU here: a TCG guest or a VM without a virtual PMU)";
  if (err == EACCES || err == EPERM) return what + " (kernel.perf_event_paranoid forbids it; run as root or lower it)";
  if (err == ENOSYS) return what + " (the kernel has no perf events: CONFIG_PERF_EVENTS)";
  return what;
}

}  // namespace

Counters& Counters::process() {
  static Counters counters;
  return counters;
}

Counters::Counters() {
  instructions_ = open_counter(PERF_COUNT_HW_INSTRUCTIONS);
  if (instructions_ < 0) {
    why_ = why(errno);
    return;
  }
  cycles_ = open_counter(PERF_COUNT_HW_CPU_CYCLES);
  if (cycles_ < 0) {
    why_ = why(errno);
    ::close(instructions_);
    instructions_ = -1;
  }
}

void Counters::start() {
  if (!why_.empty()) return;
  for (int fd : {instructions_, cycles_}) {
    ioctl(fd, PERF_EVENT_IOC_RESET, 0);
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
  }
}

std::optional<CounterReading> Counters::stop() {
  if (!why_.empty()) return std::nullopt;
  for (int fd : {instructions_, cycles_}) ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  CounterReading r;
  if (::read(instructions_, &r.instructions, sizeof r.instructions) != sizeof r.instructions ||
      ::read(cycles_, &r.cycles, sizeof r.cycles) != sizeof r.cycles)
    return std::nullopt;
  return r;
}

ProfileSwitch& ProfileSwitch::process() {
  static ProfileSwitch s;
  return s;
}

std::string ProfileSwitch::open(const std::string& path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  return fd_ < 0 ? std::strerror(errno) : "";
}

// A failed write would leave the profiler's counts as they were (another pass's): the
// round fails instead, and with it the pass.
void ProfileSwitch::write(const char* value) {
  if (fd_ >= 0 && ::pwrite(fd_, value, 1, 0) != 1)
    throw std::runtime_error(std::string("--profile-switch: writing ") + value + ": " + std::strerror(errno));
}

void ProfileSwitch::on() { write("1"); }
void ProfileSwitch::off() { write("0"); }

}  // namespace ks::agent

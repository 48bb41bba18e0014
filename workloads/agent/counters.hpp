#pragma once
// Hardware counters beside the clock: instructions and cycles retired by the agent and the
// kernel on its behalf (its threads included) over a round's timed region, read with
// perf_event_open. Where the machine has no PMU (a TCG guest, many cloud VMs), the kernel has
// no perf events, or perf_event_paranoid forbids them, a round says why instead. The one
// file of the agent's pure pieces that asks the kernel for something.
#include <cstdint>
#include <optional>
#include <string>

namespace ks::agent {

struct CounterReading {
  uint64_t instructions = 0;
  uint64_t cycles = 0;
};

class Counters {
 public:
  // This process's counters, opened on first use: call it before starting the threads a
  // round uses, so that they inherit them.
  static Counters& process();
  void start();                         // reset and enable (no-op when unavailable)
  std::optional<CounterReading> stop();  // disable and read; nullopt when unavailable
  // Why there are no counters; empty when there are.
  const std::string& unavailable() const { return why_; }
  Counters(const Counters&) = delete;
  Counters& operator=(const Counters&) = delete;

 private:
  Counters();
  int instructions_ = -1, cycles_ = -1;
  std::string why_;
};

// --profile-switch FILE: "1" is written to FILE as a round's timed region starts and "0" as it
// ends, outside the clock and counter readings, so that a profiler switched by it (ftrace's
// function_profile_enabled, which starts from zero when switched on) counts during the timed
// operations only (on every CPU: the kernel's threads too). A failed write throws (the round
// fails). Without the option it does nothing.
class ProfileSwitch {
 public:
  static ProfileSwitch& process();
  std::string open(const std::string& path);  // "" or why FILE cannot be opened for writing
  void on();
  void off();

 private:
  ProfileSwitch() = default;
  void write(const char* value);
  int fd_ = -1;
};

}  // namespace ks::agent

#pragma once
// Timing. Rounds are timed with CLOCK_MONOTONIC and cross-checked against
// CLOCK_MONOTONIC_RAW: in a TCG guest RAW once returned garbage while MONOTONIC was right
// (environment.md, "Traps"), so a round whose clocks disagree is a failed round, not a number.
#include <time.h>

#include <cstdint>
#include <optional>
#include <string>

#include "agent/counters.hpp"

namespace ks::agent {

struct ClockSpan {
  ClockSpan(int64_t monotonic = 0, int64_t monotonic_raw = 0, std::optional<CounterReading> counted = {})
      : monotonic_ns(monotonic), monotonic_raw_ns(monotonic_raw), counters(counted) {}
  int64_t monotonic_ns;      // the measurement
  int64_t monotonic_raw_ns;  // the check
  std::optional<CounterReading> counters;  // hardware counters over the same region, where there are
};

inline int64_t clock_ns(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Brackets a timed region. The RAW readings enclose the MONOTONIC ones, so the two spans
// differ by two clock reads when both clocks are sane; the hardware counters enclose both.
class Stopwatch {
 public:
  void start() {
    ProfileSwitch::process().on();
    Counters::process().start();
    raw_start_ = clock_ns(CLOCK_MONOTONIC_RAW);
    mono_start_ = clock_ns(CLOCK_MONOTONIC);
  }
  ClockSpan stop() const {
    int64_t mono_end = clock_ns(CLOCK_MONOTONIC);
    int64_t raw_end = clock_ns(CLOCK_MONOTONIC_RAW);
    ClockSpan span{mono_end - mono_start_, raw_end - raw_start_, Counters::process().stop()};
    ProfileSwitch::process().off();
    return span;
  }
  int64_t monotonic_start() const { return mono_start_; }

 private:
  int64_t raw_start_ = 0;
  int64_t mono_start_ = 0;
};

// The agreement rule: the clocks may differ by at most 2% of the measured span plus 1 ms
// (NTP slews MONOTONIC by up to 0.05%; the 1 ms covers coarse clocksources on short spans).
bool clocks_agree(const ClockSpan& span);

// "clocks disagree: monotonic X ns vs monotonic_raw Y ns"
std::string clock_disagreement(const ClockSpan& span);

}  // namespace ks::agent

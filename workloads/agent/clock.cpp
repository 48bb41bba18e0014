#include "agent/clock.hpp"

#include <cstdlib>

namespace ks::agent {

bool clocks_agree(const ClockSpan& span) {
  if (span.monotonic_ns < 0 || span.monotonic_raw_ns < 0) return false;
  // Integer maths: 2% of the span, plus 1 ms; no rounding surprises near the bound.
  int64_t allowed = span.monotonic_ns / 50 + 1'000'000;
  return std::llabs(span.monotonic_ns - span.monotonic_raw_ns) <= allowed;
}

std::string clock_disagreement(const ClockSpan& span) {
  return "clocks disagree: monotonic " + std::to_string(span.monotonic_ns) + " ns vs monotonic_raw " +
         std::to_string(span.monotonic_raw_ns) + " ns";
}

}  // namespace ks::agent

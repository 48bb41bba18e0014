#include "agent/canary.hpp"

#include <time.h>

namespace ks::agent {
namespace {

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

uint64_t time_canary() {
  constexpr int kSteps = 8'000'000;
  volatile uint64_t sink = 0;  // keeps the loop from being folded away
  uint64_t x = 0x9E3779B97F4A7C15ull;
  auto start = now_ns();
  for (int i = 0; i < kSteps; ++i) {  // xorshift64: a fixed chain of dependent steps
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  sink = x;
  (void)sink;
  return now_ns() - start;
}

}  // namespace ks::agent

#pragma once
// A fixed CPU-bound task timed beside every round: it does the same work every time, so
// when it takes far longer than usual, the machine (the host under a guest, another job)
// took the CPU away during that stretch, and the round beside it is not a clean sample.
#include <cstdint>

namespace ks::agent {

// Runs the canary once and returns its CLOCK_MONOTONIC duration in ns (~0.3 ms natively,
// a few ms under TCG).
uint64_t time_canary();

}  // namespace ks::agent

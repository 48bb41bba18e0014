#pragma once
// A fixed CPU-bound task timed beside every round: it does the same work every time, so
// when it takes far longer than usual, the machine (the host under a guest, another job)
// took the CPU away during that stretch, and the round beside it is not a clean sample.
#include <cstdint>

namespace ks::agent {

// Runs the canary once and returns its CLOCK_MONOTONIC duration in ns: about 10 ms natively
// and 20 ms under TCG. It must span several scheduler slices (3-12 ms): a canary shorter than
// one slice runs untouched while another task on the same core halves the round beside it
// (seen under TCG: whole points 1.9x slow, their 0.5 ms canaries normal).
uint64_t time_canary();

}  // namespace ks::agent

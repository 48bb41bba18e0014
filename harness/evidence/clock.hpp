#pragma once
// The clocks a point can be measured with: one table. The backend names the clock it
// measured with in the bundle (machine.clock.name); the analysis reads its resolution
// floor, the reports what it measures and what it cannot see, and compare, history and
// trend refuse to put two clocks side by side. Pure.
#include <string>
#include <string_view>
#include <vector>

#include "evidence/bundle.hpp"

namespace ks::evidence {

struct Clock {
  std::string name;       // machine.clock.name: wall | icount
  std::string measures;   // what its "ns" are, for a header line
  std::string ns_name;    // what reports call its nanosecond: "ns", or "instr" (ns/op -> instr/op)
  std::string rate_note;  // after a per-second rate's unit ("IOPS (icount)"): its second is virtual
  bool deterministic = false;  // the same kernel and work give the same figure on any host
  // The sd of one block log ratio ln(P/C) below which the clock cannot resolve a change:
  // its granularity plus the guest's own nondeterminism, measured (docs/statistics.md). An
  // observed spread at or under it is taken as this known spread; 0: no floor (wall time is
  // judged by its own spread alone).
  double resolution_sd_log_ratio = 0;
  std::string cannot_see;  // what a verdict on this clock is blind to; empty: nothing to say
};

const std::vector<Clock>& clock_table();

// The row named NAME; throws std::invalid_argument for a name not in the table.
const Clock& clock_named(std::string_view name);

// The clock a bundle's points were measured with: machine.clock.name, or "wall" for a bundle
// written before clocks were recorded (they all measured wall time).
const Clock& bundle_clock(const Bundle& b);

// The clock a QEMU guest is timed with: its instructions under TCG with one vCPU (under
// -icount QEMU never brings a second one up) unless the experiment asks for wall time
// (REQUESTED "time"), else wall time. ACCEL: the accelerator used.
const Clock& qemu_clock(const std::string& accel, const std::string& requested, uint32_t vcpus);

}  // namespace ks::evidence

#include "evidence/clock.hpp"

#include <stdexcept>

namespace ks::evidence {

const std::vector<Clock>& clock_table() {
  static const std::vector<Clock> kTable = {
      {"wall", "wall-clock time (CLOCK_MONOTONIC)", "ns", "", false, 0, ""},
      // QEMU TCG with -icount shift=0,sleep=off: the guest's clocks advance 1 ns per guest
      // instruction executed, whatever the host does. Five fresh boots of one kernel gave
      // per-point sds of 0.002% (clone, dedupe) and 0.02% (dio-randwrite, 4 jobs), so one
      // block ratio's sd is at most ~0.03%; the floor is 0.05%, with room for other shapes.
      {"icount", "guest instructions (QEMU TCG -icount shift=0: 1 virtual ns per instruction executed)", "instr",
       " (icount)", true, 0.0005,
       "instruction counts do not see cache misses, lock contention or I/O latency, which only real "
       "hardware shows: a change there needs wall time under KVM or on bare metal"},
  };
  return kTable;
}

const Clock& clock_named(std::string_view name) {
  for (auto& c : clock_table())
    if (c.name == name) return c;
  throw std::invalid_argument("no clock named \"" + std::string(name) + "\"");
}

const Clock& bundle_clock(const Bundle& b) {
  static const auto name = nlohmann::json::json_pointer("/clock/name");
  const auto& m = b.machine;
  if (m.is_object() && m.contains(name) && m[name].is_string()) return clock_named(m[name].get<std::string>());
  return clock_named("wall");
}

const Clock& qemu_clock(const std::string& accel, const std::string& requested, uint32_t vcpus) {
  return clock_named(accel == "tcg" && requested != "time" && vcpus == 1 ? "icount" : "wall");
}

}  // namespace ks::evidence

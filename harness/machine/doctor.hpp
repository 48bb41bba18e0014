#pragma once
// `ksandwich doctor`: what this machine can do and what is missing, with the fix.
#include <string>
#include <vector>

namespace ks::machine {

struct Check {
  std::string name;
  bool ok = false;
  bool required = false;  // the host sandwich cannot run without it
  bool main_job = false;  // the QEMU sandwich (the main job) cannot run without it
  std::string detail;     // what was found
  std::string fix;        // what to do when it is missing
};

// The machine's checks (tracing is checked by the caller with trace::probe_tracing).
std::vector<Check> doctor_checks();

}  // namespace ks::machine

#pragma once
// CPU pinning, read back rather than assumed.
#include <vector>

namespace ks::agent {

// The CPUs this process may run on (sched_getaffinity).
std::vector<int> allowed_cpus();

// Pins the process to CPU (threads started later inherit it) and returns the read-back
// allowed set. Throws UserError when CPU is not in the allowed set.
std::vector<int> pin_to_cpu(int cpu);

// sched_getcpu(), -1 when unknown.
int current_cpu();

}  // namespace ks::agent

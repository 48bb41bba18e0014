#include "agent/cpu.hpp"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "util/error.hpp"

namespace ks::agent {
namespace {

std::string list(const std::vector<int>& cpus) {
  std::string s;
  for (int c : cpus) s += (s.empty() ? "" : ",") + std::to_string(c);
  return s;
}

}  // namespace

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) throw SystemError("sched_getaffinity", errno);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

std::vector<int> pin_to_cpu(int cpu) {
  auto allowed = allowed_cpus();
  if (std::find(allowed.begin(), allowed.end(), cpu) == allowed.end())
    throw UserError("--cpu " + std::to_string(cpu) + " is not a CPU this process may run on",
                    "pick one of " + list(allowed));
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    throw UserError("cannot pin to CPU " + std::to_string(cpu) + ": " + std::strerror(errno),
                    "pick one of " + list(allowed));
  auto now = allowed_cpus();
  if (now != std::vector<int>{cpu})
    throw SystemError("pin to CPU " + std::to_string(cpu), "read back allowed CPUs " + list(now));
  return now;
}

int current_cpu() { return sched_getcpu(); }

}  // namespace ks::agent

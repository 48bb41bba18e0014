#include "agent/host.hpp"

#include <sys/utsname.h>

#include "util/files.hpp"

namespace ks::agent {

std::string kernel_release() {
  utsname u{};
  if (uname(&u) != 0) return "";
  return u.release;
}

std::string clocksource() {
  return read_first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource");
}

}  // namespace ks::agent

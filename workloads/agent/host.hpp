#pragma once
// What the start line records about the kernel the agent runs on.
#include <string>

namespace ks::agent {

std::string kernel_release();  // uname -r
std::string clocksource();     // current_clocksource, "" when unreadable

}  // namespace ks::agent

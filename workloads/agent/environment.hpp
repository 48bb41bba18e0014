#pragma once
// The checks of the command line that need the machine: does --dir exist, is the fio job
// there, is fio installed. Each failure is a UserError (exit 2) saying what to do.
#include "agent/options.hpp"

namespace ks::agent {

void check_environment(const Options& options);

}  // namespace ks::agent

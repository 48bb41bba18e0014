#include "kernel/toolchain.hpp"

#include <chrono>

#include "proc/runner.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::kernel {
namespace {

using proc::command;

std::string first_line_of_version(const std::string& program, const std::string& what) {
  if (!proc::have_program(program))
    throw UserError(what + " `" + program + "` not found",
                    "install build-essential (gcc, binutils, make) or set CC=/LD= to one "
                    "that exists");
  auto r = proc::run(command({program, "--version"}, std::chrono::seconds(30)));
  if (!r.ok()) throw UserError("`" + program + " --version` failed: " + r.describe());
  return trim(r.out.substr(0, r.out.find('\n')));
}

}  // namespace

Toolchain detect_toolchain(const std::vector<std::string>& make_variables, bool use_ccache) {
  Toolchain t;
  for (auto& v : make_variables) {
    if (starts_with(v, "CC=")) t.cc = v.substr(3);
    if (starts_with(v, "LD=")) t.ld = v.substr(3);
  }
  t.compiler = first_line_of_version(t.cc, "compiler");
  t.linker = first_line_of_version(t.ld, "linker");
  t.make = first_line_of_version("make", "make");
  if (use_ccache && proc::have_program("ccache")) t.ccache = first_line_of_version("ccache", "ccache");
  return t;
}

}  // namespace ks::kernel

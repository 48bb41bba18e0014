#pragma once
// The toolchain a kernel is built with, as its own --version output says.
#include <string>
#include <vector>

namespace ks::kernel {

struct Toolchain {
  std::string cc = "gcc";   // the compiler command (CC= from the make variables, else gcc)
  std::string ld = "ld";    // the linker command (LD=, else ld)
  std::string compiler;     // first line of `cc --version`
  std::string linker;       // first line of `ld --version`
  std::string make;         // first line of `make --version`
  std::string ccache;       // first line of `ccache --version`; empty when not used
};

// Throws UserError when the compiler, linker or make is missing.
Toolchain detect_toolchain(const std::vector<std::string>& make_variables, bool use_ccache);

}  // namespace ks::kernel

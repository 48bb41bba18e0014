#pragma once
// A KVM that opens but cannot run a guest, on any machine: KSANDWICH_KVM_DEVICE points at
// /dev/null (it opens read-write), and a qemu-system-x86_64 wrapper first on PATH aborts
// the way QEMU does under broken nested virtualization whenever it is asked for KVM, and
// runs the real QEMU otherwise.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "proc/runner.hpp"
#include "util/files.hpp"

namespace ks::test {

inline const char* kBrokenKvmMessage =
    "qemu-system-x86_64: error: failed to set MSR 0x10a to 0x69\n"
    "qemu-system-x86_64: ../../target/i386/kvm/kvm.c:3145: kvm_buf_set_msrs: Assertion failed.\n";

enum class BrokenKvm {
  aborts,  // QEMU dies at once with the MSR assertion
  hangs,   // QEMU runs at 100% CPU and the guest prints nothing (as on this project's VMs)
};

// Writes DIR/qemu-system-x86_64; returns the environment that makes ksandwich meet it.
inline std::vector<std::pair<std::string, std::string>> broken_kvm_env(const std::filesystem::path& dir,
                                                                       BrokenKvm how = BrokenKvm::aborts) {
  auto real = ks::proc::find_program("qemu-system-x86_64");
  std::string broken = how == BrokenKvm::aborts
                           ? "printf '%s' '" + std::string(kBrokenKvmMessage) + "' >&2; kill -ABRT $$"
                           : "exec sleep 3600";
  std::string script = "#!/bin/sh\n"
                       "case \"$*\" in *accel=kvm*) " + broken + " ;; esac\n"
                       "exec " + (real ? real->string() : std::string("false")) + " \"$@\"\n";
  auto wrapper = dir / "qemu-system-x86_64";
  ks::write_file(wrapper, script);
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  const char* path = getenv("PATH");
  return {{"PATH", dir.string() + ":" + (path ? path : "/usr/bin:/bin")}, {"KSANDWICH_KVM_DEVICE", "/dev/null"}};
}

}  // namespace ks::test

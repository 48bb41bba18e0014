// The accelerator is decided by a guest that runs, not by a /dev/kvm that opens: the probe
// firmware really runs under QEMU, and a KVM that aborts (as under broken nested
// virtualization) gives TCG with the reason, or exit 2 when the experiment insists on KVM.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "boot/accel.hpp"
#include "proc/runner.hpp"
#include "support/broken_kvm.hpp"
#include "support/scoped_env.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace fs = std::filesystem;

using ks::test::ScopedEnv;

TEST_CASE("the probe firmware runs a guest under TCG and exits through isa-debug-exit", "[concurrent]") {
  KS_SKIP_UNLESS(ks::proc::have_program("qemu-system-x86_64"), "needs qemu-system-x86_64 (tools/setup.sh)");
  auto image = ks::boot::probe_firmware();
  REQUIRE(image.size() == 64 * 1024);
  ks::test::TempDir tmp("ks-accel");
  ks::write_file(tmp.path / "probe.bin", image);
  auto r = ks::proc::run(ks::proc::command(ks::boot::probe_argv("qemu-system-x86_64", "tcg", tmp.path / "probe.bin"),
                                           std::chrono::seconds(30)));
  INFO(r.describe());
  CHECK(r.exit_code == ks::boot::kProbeExitCode);
  CHECK_FALSE(r.timed_out);
}

TEST_CASE("a KVM that opens but aborts gives TCG with QEMU's message, remembered, kvm asked for is exit 2", "[concurrent]") {
  KS_SKIP_UNLESS(ks::proc::have_program("qemu-system-x86_64"), "needs qemu-system-x86_64 (tools/setup.sh)");
  ks::test::TempDir tmp("ks-accel");
  ScopedEnv env(ks::test::broken_kvm_env(tmp.path));
  auto cache = tmp.path / "cache";

  auto first = ks::boot::choose_accel("auto", cache);
  CHECK(first.accel == "tcg");
  CHECK_FALSE(first.remembered);
  CHECK_THAT(first.reason, Catch::Contains("/dev/null opens but cannot run a guest"));
  CHECK_THAT(first.kvm_probe, Catch::Contains("was killed by signal 6"));
  CHECK_THAT(first.kvm_probe, Catch::Contains("failed to set MSR 0x10a"));

  auto again = ks::boot::choose_accel("auto", cache);
  CHECK(again.accel == "tcg");
  CHECK(again.remembered);
  CHECK(again.kvm_probe == first.kvm_probe);

  try {
    ks::boot::choose_accel("kvm", cache);
    FAIL("kvm was asked for and is broken: choose_accel must refuse");
  } catch (const ks::UserError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("failed to set MSR 0x10a"));
  }
  CHECK(ks::boot::choose_accel("tcg", cache).accel == "tcg");
}

TEST_CASE("without any KVM device the choice is TCG, and kvm asked for is exit 2", "[concurrent]") {
  ScopedEnv env(std::vector<std::pair<std::string, std::string>>{{"KSANDWICH_KVM_DEVICE", "/nonexistent/kvm"}});
  auto c = ks::boot::choose_accel("auto", "");
  CHECK(c.accel == "tcg");
  CHECK_THAT(c.reason, Catch::Contains("no usable /nonexistent/kvm"));
  CHECK(c.kvm_probe.empty());
  CHECK_THROWS_AS(ks::boot::choose_accel("kvm", ""), ks::UserError);
}

TEST_CASE("on this machine's own KVM the probe's answer is what QEMU does", "[concurrent]") {
  KS_SKIP_UNLESS(ks::proc::have_program("qemu-system-x86_64"), "needs qemu-system-x86_64 (tools/setup.sh)");
  KS_SKIP_UNLESS(fs::exists("/dev/kvm"), "this machine has no /dev/kvm (the fallback is tested above)");
  ks::test::TempDir tmp("ks-accel");
  auto c = ks::boot::choose_accel("auto", tmp.path);
  ks::write_file(tmp.path / "probe.bin", ks::boot::probe_firmware());
  auto r = ks::proc::run(ks::proc::command(ks::boot::probe_argv("qemu-system-x86_64", "kvm", tmp.path / "probe.bin"),
                                           std::chrono::seconds(30)));
  std::printf("this machine's KVM: %s (%s)\n", c.accel.c_str(), c.reason.c_str());
  CHECK((c.accel == "kvm") == (r.exit_code == ks::boot::kProbeExitCode));
}

TEST_CASE("a KVM that hangs a Linux guest at full CPU gives TCG once the kernel probe times out", "[concurrent]") {
  KS_SKIP_UNLESS(ks::proc::have_program("qemu-system-x86_64"), "needs qemu-system-x86_64 (tools/setup.sh)");
  ks::test::TempDir tmp("ks-accel");
  ScopedEnv env(ks::test::broken_kvm_env(tmp.path, ks::test::BrokenKvm::hangs));
  // The wrapper hangs before it looks at the kernel, so any file stands for one here.
  ks::write_file(tmp.path / "bzImage", "not a kernel");
  auto c = ks::boot::choose_accel("auto", tmp.path / "cache", tmp.path / "bzImage");
  CHECK(c.accel == "tcg");
  CHECK_THAT(c.kvm_probe, Catch::Contains("printed nothing within 30 s"));
  // Asked again, the answer is recalled instead of waiting 30 s once more.
  CHECK(ks::boot::choose_accel("auto", tmp.path / "cache", tmp.path / "bzImage").remembered);
}

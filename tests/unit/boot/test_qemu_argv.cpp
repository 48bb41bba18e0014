// The QEMU command line and the kernel command line are data: pinned here for KVM, TCG,
// CPU pinning and the emulated NVMe drive.
#include <algorithm>
#include <catch2/catch.hpp>

#include "boot/qemu.hpp"
#include "util/error.hpp"

using namespace ks::boot;

namespace {

QemuSpec spec() {
  QemuSpec s;
  s.vcpus = 1;
  s.memory_mib = 2048;
  s.kernel = "/cache/bzImage";
  s.initrd = "/out/initramfs/initramfs-abc.cpio";
  s.cmdline = "console=ttyS0 panic=-1 preempt=none";
  s.console_log = "/out/points/00-control/console.log";
  s.results = "/out/points/00-control/results.jsonl";
  return s;
}

// The word after FLAG (the first occurrence), or "" when FLAG is absent.
std::string after(const std::vector<std::string>& argv, const std::string& flag) {
  auto it = std::find(argv.begin(), argv.end(), flag);
  return it == argv.end() || it + 1 == argv.end() ? "" : *(it + 1);
}

bool has(const std::vector<std::string>& argv, const std::string& word) {
  return std::find(argv.begin(), argv.end(), word) != argv.end();
}

ks::experiment::Experiment experiment(const std::string& storage, int cpu = -1) {
  return ks::experiment::parse(nlohmann::json::parse(R"({
    "name": "t", "backend": "qemu", "cpu": )" + std::to_string(cpu) + R"(,
    "storage": )" + storage + R"(,
    "qemu": {"memory_mib": 1024, "vcpus": 2},
    "arms": {"control": {}, "patched": {"cmdline": ["rdinit=/nonexistent"]}},
    "workloads": [{"name": "clone", "ops": 500}]})"));
}

}  // namespace

TEST_CASE("qemu argv under TCG: software CPU on q35 with no defaults plus the results port and no reboot") {
  auto argv = qemu_argv(spec());
  REQUIRE(argv.front() == "qemu-system-x86_64");
  CHECK(after(argv, "-machine") == "q35,accel=tcg");
  CHECK(after(argv, "-cpu") == "max");
  CHECK(after(argv, "-smp") == "1");
  CHECK(after(argv, "-m") == "2048");
  CHECK(after(argv, "-kernel") == "/cache/bzImage");
  CHECK(after(argv, "-initrd") == "/out/initramfs/initramfs-abc.cpio");
  CHECK(after(argv, "-append") == "console=ttyS0 panic=-1 preempt=none");
  CHECK(after(argv, "-serial") == "file:/out/points/00-control/console.log");
  CHECK(has(argv, "-no-reboot"));
  CHECK(has(argv, "-nodefaults"));
  CHECK(has(argv, "virtio-serial-pci"));
  CHECK(has(argv, "file,id=results,path=/out/points/00-control/results.jsonl"));
  CHECK(has(argv, "virtserialport,chardev=results,name=ksandwich.results"));
  CHECK_FALSE(has(argv, "taskset"));
  CHECK_FALSE(has(argv, "-drive"));
}

TEST_CASE("qemu argv under KVM: accel=kvm and the host CPU") {
  auto s = spec();
  s.kvm = true;
  s.vcpus = 4;
  auto argv = qemu_argv(s);
  CHECK(after(argv, "-machine") == "q35,accel=kvm");
  CHECK(after(argv, "-cpu") == "host");
  CHECK(after(argv, "-smp") == "4");
}

TEST_CASE("qemu argv pinned: the whole command runs under taskset on the experiment's CPU") {
  auto s = spec();
  s.pin_cpu = 1;
  auto argv = qemu_argv(s);
  REQUIRE(argv.size() > 4);
  CHECK(std::vector<std::string>(argv.begin(), argv.begin() + 4) ==
        std::vector<std::string>{"taskset", "-c", "1", "qemu-system-x86_64"});
}

TEST_CASE("qemu argv with an NVMe drive: a raw file behind an nvme device, commas escaped") {
  auto s = spec();
  s.nvme_image = "/dev/shm/a,b.img";
  s.results = "/out/x,y/results.jsonl";
  auto argv = qemu_argv(s);
  CHECK(after(argv, "-drive") == "file=/dev/shm/a,,b.img,if=none,id=nvm,format=raw");
  CHECK(has(argv, "nvme,serial=ksandwich,drive=nvm"));
  CHECK(has(argv, "file,id=results,path=/out/x,,y/results.jsonl"));
  CHECK(qemu_option_value("a,b,,c") == "a,,b,,,,c");
}

TEST_CASE("guest kernel command line: panic=-1 and preempt=none and the brd size in KiB with the arm's words last") {
  auto e = experiment(R"({"kind": "brd", "size_mib": 256})");
  CHECK(guest_cmdline(e, e.arms.at("control")) ==
        "console=ttyS0 panic=-1 preempt=none random.trust_cpu=on brd.rd_nr=1 brd.rd_size=262144");
  CHECK(guest_cmdline(e, e.arms.at("patched")) ==
        "console=ttyS0 panic=-1 preempt=none random.trust_cpu=on brd.rd_nr=1 brd.rd_size=262144 rdinit=/nonexistent");
  auto nvme = experiment(R"({"kind": "nvme", "size_mib": 256})");
  CHECK(guest_cmdline(nvme, nvme.arms.at("control")) == "console=ttyS0 panic=-1 preempt=none random.trust_cpu=on");
}

TEST_CASE("guest storage: auto and brd are /dev/ram0 and nvme is /dev/nvme0n1, other kinds are refused") {
  ks::experiment::Storage s;
  s.kind = "auto";
  CHECK(guest_storage(s).device == "/dev/ram0");
  s.kind = "brd";
  CHECK(guest_storage(s).kind == "brd");
  s.kind = "nvme";
  CHECK(guest_storage(s).device == "/dev/nvme0n1");
  s.kind = "zram";
  CHECK_THROWS_AS(guest_storage(s), ks::UserError);
}

TEST_CASE("guest plan: quoted words with the arm's options and the agent pinned to the last vCPU") {
  auto e = experiment(R"({"kind": "brd", "size_mib": 256, "mkfs_options": ["-O", "no-holes"],
                          "mount_options": ["noatime"]})", 1);
  e.arms.at("patched").extra_mount_options = {"commit=5"};
  auto plan = guest_plan(e, e.arms.at("patched"), ks::evidence::clock_named("wall"));
  CHECK(plan.find("KS_DEVICE='/dev/ram0'\n") != std::string::npos);
  CHECK(plan.find("KS_MOUNT_OPTIONS='noatime,commit=5'\n") != std::string::npos);
  CHECK(plan.find("mkfs.btrfs -f '-O' 'no-holes' \"$KS_DEVICE\"") != std::string::npos);
  CHECK(plan.find("run_workload 'clone' '/usr/bin/ksandwich-agent' 'clone' '--dir' '/mnt/clone'") !=
        std::string::npos);
  CHECK(plan.find("'--cpu' '1'") != std::string::npos);  // vcpus 2: the last vCPU is 1
  CHECK(plan.find("'--ops' '500'") != std::string::npos);
  CHECK(guest_cpu(e) == 1);
  e.cpu = -1;
  CHECK(guest_cpu(e) == -1);
  // The CPU canary times host disturbance; the instruction clock has none to see.
  CHECK(plan.find("--no-canary") == std::string::npos);
  auto icount = guest_plan(e, e.arms.at("patched"), ks::evidence::clock_named("icount"));
  CHECK(icount.find("'--ops' '500' '--range-bytes' '4096' '--no-canary'") != std::string::npos);
}

TEST_CASE("guest plan: the arm's direct-hit functions and a short pass of the same workloads") {
  auto e = experiment(R"({"kind": "brd", "size_mib": 256})");
  e.direct_hits = {{"btrfs_remap_file_range", true, {}}, {"__vfs_getxattr", false, {"patched"}}};
  e.workloads[0].ops = 5000;
  auto control = guest_plan(e, e.arms.at("control"), ks::evidence::clock_named("wall"));
  CHECK(control.find("KS_TRACE_FUNCTIONS='btrfs_remap_file_range'\n") != std::string::npos);
  auto patched = guest_plan(e, e.arms.at("patched"), ks::evidence::clock_named("wall"));
  CHECK(patched.find("KS_TRACE_FUNCTIONS='btrfs_remap_file_range __vfs_getxattr'\n") != std::string::npos);
  CHECK(patched.find("KS_TRACE_WORDS='-e btrfs_remap_file_range -e __vfs_getxattr'\n") != std::string::npos);
  CHECK(patched.find("KS_TRACE_REGEX='btrfs_remap_file_range(\\.[a-z_]+\\.[0-9]+)*|__vfs_getxattr(\\.[a-z_]+\\.[0-9]+)*'\n") !=
        std::string::npos);
  // One round of at most 1,000 operations, in its own directory.
  CHECK(patched.find("run_pass 'clone-direct-hit' '/usr/bin/ksandwich-agent' 'clone' '--dir' "
                     "'/mnt/clone-direct-hit' '--rounds' '1' '--warmup' '0'") != std::string::npos);
  CHECK(patched.find("'--ops' '1000'") != std::string::npos);
  e.direct_hits.clear();
  CHECK(guest_plan(e, e.arms.at("control"), ks::evidence::clock_named("wall")).find("KS_TRACE_FUNCTIONS=''\n") != std::string::npos);
}

TEST_CASE("guest plan: with profile, each workload's short pass again, the profiler switched by the agent, in the direct-hit pass's place") {
  auto e = experiment(R"({"kind": "brd", "size_mib": 256})");
  CHECK(guest_plan(e, e.arms.at("control"), ks::evidence::clock_named("wall")).find("ks_profile_pass") ==
        std::string::npos);
  e.profile = true;
  auto plan = guest_plan(e, e.arms.at("control"), ks::evidence::clock_named("icount"));
  CHECK(plan.find("KS_PROFILE_REGEX='btrfs_[^ ]*|__btrfs_[^ ]*|vfs_[^ ]*|") != std::string::npos);
  // Another arm's direct-hit function is profiled here too (else it would read as new),
  // while the gate counts this arm's only.
  e.direct_hits = {{"xfs_only_patched", false, {"patched"}}};
  plan = guest_plan(e, e.arms.at("control"), ks::evidence::clock_named("icount"));
  CHECK(plan.find("KS_TRACE_FUNCTIONS=''") != std::string::npos);
  CHECK(plan.find("|xfs_only_patched(\\.[a-z_]+\\.[0-9]+)*'") != std::string::npos);
  CHECK(plan.find("-e xfs_only_patched") != std::string::npos);
  CHECK(plan.find("ks_direct_hit_pass") == std::string::npos);
  CHECK(plan.find("profile_workload 'clone' '/usr/bin/ksandwich-agent' 'clone' '--dir' '/mnt/clone-profile' "
                  "'--rounds' '1' '--warmup' '0'") != std::string::npos);
  CHECK(plan.find("'--profile-switch' '/sys/kernel/tracing/function_profile_enabled'") != std::string::npos);
}

TEST_CASE("the embedded guest init reads the plan and ends with reboot -f") {
  const auto& init = guest_init_script();
  CHECK(init.rfind("#!/bin/sh", 0) == 0);
  CHECK(init.find(". /ksandwich/plan.sh") != std::string::npos);
  CHECK(init.find("ksandwich.results") != std::string::npos);
  CHECK(init.find("reboot -f") != std::string::npos);
}

TEST_CASE("a dry run describes the QEMU command and the plan and touches nothing") {
  auto e = experiment(R"({"kind": "nvme", "size_mib": 256})", 1);
  e.qemu.vcpus = 1;  // the instruction clock's one vCPU
  BackendOptions options;
  options.agent = "/nonexistent/ksandwich-agent";
  QemuBackend backend(options);
  const fs::path dir = "/nonexistent-ksandwich-dry-run";
  PointContext ctx{e, e.arms.at("control"), 3, 0, dir, dir / "points/03-control", fs::path("/k/bzImage"), ""};
  auto text = backend.describe_point(ctx);
  // Nothing is probed in a dry run: the accelerator is said to be decided when the run starts.
  CHECK(text.rfind("# accelerator: auto (a KVM probe decides when the run starts; shown with tcg)\n"
                   "# clock: icount, guest instructions",
                   0) == 0);
  CHECK(text.find("\n$ 'taskset' '-c' '1' 'qemu-system-x86_64'") != std::string::npos);
  CHECK(text.find("accel=tcg") != std::string::npos);
  CHECK(text.find("'-icount' 'shift=0,sleep=off'") != std::string::npos);
  CHECK(text.find("'-kernel' '/k/bzImage'") != std::string::npos);
  CHECK(text.find("'nvme,serial=ksandwich,drive=nvm'") != std::string::npos);
  CHECK(text.find("KS_DEVICE='/dev/nvme0n1'") != std::string::npos);
  CHECK_FALSE(fs::exists(dir));

  // Two vCPUs under TCG: wall time, since a second vCPU never comes up under -icount (QEMU
  // 7.2 hung at "Booting SMP configuration" for 150 s, measured) and they would take turns.
  options.vcpus = e.qemu.vcpus = 2;
  QemuBackend smp(options);
  auto smp_text = smp.describe_point(ctx);
  CHECK(smp_text.find("# clock: wall") != std::string::npos);
  CHECK(smp_text.find("'-smp' '2'") != std::string::npos);
  CHECK(smp_text.find("-icount") == std::string::npos);
}

TEST_CASE("qemu argv: the instruction clock is TCG's -icount, never asked of KVM") {
  auto s = spec();
  s.icount = true;
  auto argv = qemu_argv(s);
  CHECK(after(argv, "-icount") == "shift=0,sleep=off");
  CHECK(after(argv, "-machine") == "q35,accel=tcg");
  s.kvm = true;
  CHECK_FALSE(has(qemu_argv(s), "-icount"));
  s.kvm = false;
  s.icount = false;
  CHECK_FALSE(has(qemu_argv(s), "-icount"));
}

TEST_CASE("the clock a dry run shows: icount under TCG unless the experiment asks for time or KVM") {
  auto e = experiment(R"({"kind": "brd", "size_mib": 256})");
  e.qemu.vcpus = 1;  // the instruction clock's one vCPU
  const fs::path dir = "/nonexistent-ksandwich-dry-run";
  PointContext ctx{e, e.arms.at("control"), 0, 0, dir, dir / "points/00-control", fs::path("/k/bzImage"), ""};
  auto described = [&](const std::string& accel, const std::string& clock) {
    BackendOptions options;
    options.accel = accel;
    options.clock = clock;
    return QemuBackend(options).describe_point(ctx);
  };
  auto contains = [](const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; };
  CHECK(contains(described("auto", "auto"), "# clock: icount"));
  CHECK(contains(described("tcg", "instructions"), "'-icount' 'shift=0,sleep=off'"));
  // "instructions" asks the probe for TCG even where the experiment left the accelerator to auto.
  CHECK(contains(described("auto", "instructions"), "# accelerator: tcg\n"));
  CHECK(contains(described("auto", "time"), "# clock: wall"));
  CHECK_FALSE(contains(described("auto", "time"), "-icount"));
  CHECK(contains(described("kvm", "auto"), "# clock: wall"));
  CHECK_FALSE(contains(described("kvm", "auto"), "-icount"));
}

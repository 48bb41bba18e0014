// The storage module against the real kernel: zram and loop devices, mkfs.btrfs, mount,
// the guard's refusals, and cleanup on success, on exceptions and on SIGINT.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <thread>

#include "proc/runner.hpp"
#include "storage/facts.hpp"
#include "storage/storage.hpp"
#include "support/skip.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

using namespace ks::storage;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

void require_storage_tools() {
  ks::test::require_root("creates block devices, runs mkfs.btrfs and mount");
  KS_SKIP_UNLESS(ks::proc::have_program("mkfs.btrfs"), "mkfs.btrfs (btrfs-progs) is not installed");
  KS_SKIP_UNLESS(fs::exists("/proc/filesystems") &&
                     ks::read_file("/proc/filesystems").find("btrfs") != std::string::npos,
                 "the running kernel has no btrfs");
}

void require_loop() {
  require_storage_tools();
  KS_SKIP_UNLESS(fs::exists("/dev/loop-control") && ks::proc::have_program("losetup"),
                 "no loop device support");
}

// Test setup and teardown commands run even while an interrupt is pending.
ks::proc::Command cmd(std::vector<std::string> argv, std::chrono::milliseconds timeout = 2min) {
  ks::proc::Command c;
  c.argv = std::move(argv);
  c.timeout = timeout;
  c.cleanup = true;
  return c;
}

ks::proc::Result sh(std::vector<std::string> argv) { return ks::proc::run_checked(cmd(std::move(argv))); }

Request request(const std::string& kind, uint64_t size_mib = 256) {
  Request r;
  r.kind = kind;
  r.size_mib = size_mib;
  return r;
}

Request device_request(const fs::path& device, bool allow_overwrite) {
  Request r = request("device");
  r.device = device;
  r.allow_overwrite = allow_overwrite;
  return r;
}

std::vector<MountEntry> mounts() { return parse_mountinfo(ks::read_file("/proc/self/mountinfo")); }

std::optional<MountEntry> mount_at(const fs::path& mp) {
  for (auto& e : mounts())
    if (e.mount_point == mp.string()) return e;
  return std::nullopt;
}

bool loop_attached(const fs::path& device) {
  return fs::exists("/sys/block/" + device.filename().string() + "/loop/backing_file");
}

// Everything a Filesystem must leave behind: nothing.
void require_gone(const nlohmann::json& d) {
  fs::path mp = d.at("mount_point").get<std::string>();
  fs::path dev = d.at("device").get<std::string>();
  CHECK_FALSE(mount_at(mp));
  CHECK_FALSE(fs::exists(mp));
  for (auto& e : mounts()) CHECK(e.source != dev.string());
  if (d.at("kind") == "loop") {
    CHECK_FALSE(loop_attached(dev));
    CHECK_FALSE(fs::exists(d.at("backing_file").get<std::string>()));
  }
  if (d.at("kind") == "zram") CHECK_FALSE(fs::exists("/sys/block/" + dev.filename().string()));
}

// A loop device over a /dev/shm file, for guard tests that need a device the harness did
// not create. Undone in the destructor, also when a CHECK or REQUIRE fails.
struct ScratchLoop {
  fs::path file;
  fs::path device;
  std::vector<fs::path> mounted;

  explicit ScratchLoop(uint64_t mib, bool partscan = false, const std::string& content = {}) {
    std::string name = "/dev/shm/ksandwich-test-XXXXXX";
    int fd = mkstemp(name.data());
    REQUIRE(fd >= 0);
    REQUIRE(ftruncate(fd, static_cast<off_t>(mib << 20)) == 0);
    if (!content.empty()) REQUIRE(pwrite(fd, content.data(), content.size(), 0) == static_cast<ssize_t>(content.size()));
    close(fd);
    file = name;
    std::vector<std::string> argv{"losetup", "--find", "--show"};
    if (partscan) argv.push_back("--partscan");
    argv.push_back(file.string());
    device = ks::trim(sh(argv).out);
  }
  ~ScratchLoop() {
    for (auto it = mounted.rbegin(); it != mounted.rend(); ++it) {
      ks::proc::run(cmd({"umount", it->string()}));
      fs::remove(*it);
    }
    ks::proc::run(cmd({"losetup", "--detach", device.string()}));
    fs::remove(file);
  }
  void mount(const fs::path& dev) {
    char dir[] = "/run/ksandwich-test-XXXXXX";
    REQUIRE(mkdtemp(dir));
    mounted.push_back(dir);
    sh({"mount", dev.string(), dir});
  }
};

// A private directory for loop backing files, so checks are not confused by other runs.
struct ScratchDir {
  fs::path dir;
  ScratchDir() {
    char name[] = "/dev/shm/ksandwich-test-scratch-XXXXXX";
    REQUIRE(mkdtemp(name));
    dir = name;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  // No backing file left, and no loop device attached to a file in here.
  void require_unused() const {
    CHECK(fs::is_empty(dir));
    auto r = ks::proc::run(cmd({"losetup", "--list", "--noheadings", "--output", "BACK-FILE"}));
    CHECK(r.out.find(dir.string()) == std::string::npos);
  }
};

std::set<fs::path> mount_dirs() {
  std::set<fs::path> dirs;
  if (fs::exists("/run/ksandwich"))
    for (auto& e : fs::directory_iterator("/run/ksandwich")) dirs.insert(e.path());
  return dirs;
}

std::string refusal(const fs::path& device, bool allow_overwrite = false) {
  try {
    guard_device(device, allow_overwrite);
  } catch (const ks::UserError& e) {
    CHECK_FALSE(e.hint().empty());
    return e.what();
  }
  FAIL("guard_device accepted " << device);
  return {};
}

void create_write_destroy(const std::string& kind) {
  nlohmann::json d;
  {
    auto btrfs = Filesystem::create(request(kind));
    d = btrfs->describe();
    INFO(d.dump());
    CHECK(d["kind"] == kind);
    CHECK(d["size_mib"] == 256);
    CHECK_THAT(d["mkfs_version"].get<std::string>(), Catch::Contains("btrfs-progs"));
    auto m = mount_at(btrfs->mount_point());
    REQUIRE(m);
    CHECK(m->fstype == "btrfs");
    CHECK(m->source == btrfs->device().string());
    CHECK(ks::starts_with(btrfs->mount_point().string(), "/run/ksandwich/mnt-"));
    ks::write_file(btrfs->mount_point() / "probe", "written on a fresh btrfs");
    CHECK(ks::read_file(btrfs->mount_point() / "probe") == "written on a fresh btrfs");
  }
  require_gone(d);
}

}  // namespace

TEST_CASE("storage: zram filesystem is created, mounted and removed", "[storage][root]") {
  require_storage_tools();
  KS_SKIP_UNLESS(fs::exists("/sys/class/zram-control/hot_add"), "no zram-control in this kernel");
  create_write_destroy("zram");
}

TEST_CASE("storage: loop filesystem is created, mounted and removed", "[storage][root]") {
  require_loop();
  create_write_destroy("loop");
}

TEST_CASE("storage: auto resolves to a kind this machine has and records it", "[storage][root]") {
  require_loop();
  auto kind = resolve_kind("auto");
  nlohmann::json d;
  {
    auto btrfs = Filesystem::create(request("auto"));
    d = btrfs->describe();
    CHECK(d["kind"] == kind);
    CHECK(d["requested_kind"] == "auto");
  }
  require_gone(d);
}

TEST_CASE("storage: mkfs and mount options reach the filesystem", "[storage][root]") {
  require_loop();
  nlohmann::json d;
  {
    auto r = request("loop");
    r.mkfs_options = {"-n", "16384", "-O", "no-holes"};
    r.mount_options = {"noatime", "nodatasum"};
    auto btrfs = Filesystem::create(r);
    d = btrfs->describe();
    INFO(d.dump());
    auto m = mount_at(btrfs->mount_point());
    REQUIRE(m);
    CHECK_THAT(m->mount_options, Catch::Contains("noatime"));
    CHECK_THAT(m->super_options, Catch::Contains("nodatasum"));
    CHECK_THAT(d["kernel_mount_options"].get<std::string>(), Catch::Contains("noatime"));
    CHECK(d["mkfs_options"] == nlohmann::json({"-n", "16384", "-O", "no-holes"}));
    CHECK(d["direct_io"] == false);
    // The superblock says what mkfs was told: nodesize and the no-holes incompat flag.
    auto super = sh({"btrfs", "inspect-internal", "dump-super", btrfs->device().string()}).out;
    CHECK_THAT(super, Catch::Matches("(.|\n)*nodesize\\s+16384(.|\n)*"));
    CHECK_THAT(super, Catch::Contains("NO_HOLES"));
    auto m2 = ks::read_file("/proc/mounts");
    CHECK_THAT(m2, Catch::Contains(btrfs->mount_point().string() + " btrfs rw,noatime"));
  }
  require_gone(d);
}

TEST_CASE("storage: an exception inside the scope leaves nothing behind", "[storage][root]") {
  require_loop();
  nlohmann::json d;
  try {
    auto btrfs = Filesystem::create(request("loop"));
    d = btrfs->describe();
    throw std::runtime_error("a workload failed halfway");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()) == "a workload failed halfway");
  }
  REQUIRE_FALSE(d.is_null());
  require_gone(d);
}

TEST_CASE("storage: a failing mkfs undoes the device it created", "[storage][root]") {
  require_loop();
  ScratchDir scratch;
  auto r = request("loop");
  r.mkfs_options = {"--no-such-option"};
  r.scratch_dir = scratch.dir;
  CHECK_THROWS_AS(Filesystem::create(r), ks::SystemError);
  scratch.require_unused();
}

TEST_CASE("storage: a failing mkfs removes the zram device it added", "[storage][root]") {
  require_storage_tools();
  KS_SKIP_UNLESS(fs::exists("/sys/class/zram-control/hot_add"), "no zram-control in this kernel");
  auto zram_devices = [] {
    std::set<std::string> names;
    for (auto& e : fs::directory_iterator("/sys/block"))
      if (ks::starts_with(e.path().filename().string(), "zram")) names.insert(e.path().filename());
    return names;
  };
  auto before = zram_devices();
  auto r = request("zram");
  r.mkfs_options = {"--no-such-option"};
  CHECK_THROWS_AS(Filesystem::create(r), ks::SystemError);
  CHECK(zram_devices() == before);
}

TEST_CASE("storage: a failing mount undoes mount point, device and file", "[storage][root]") {
  require_loop();
  ScratchDir scratch;
  auto dirs_before = mount_dirs();
  auto r = request("loop");
  r.mount_options = {"no_such_mount_option"};
  r.scratch_dir = scratch.dir;
  CHECK_THROWS_AS(Filesystem::create(r), ks::SystemError);
  CHECK(mount_dirs() == dirs_before);
  scratch.require_unused();
}

TEST_CASE("storage: guard refuses a mounted device", "[storage][root]") {
  require_loop();
  auto btrfs = Filesystem::create(request("loop"));
  CHECK_THAT(refusal(btrfs->device(), true), Catch::Contains("is mounted (on " + btrfs->mount_point().string()));
}

TEST_CASE("storage: guard refuses a device with a filesystem unless allow_overwrite", "[storage][root]") {
  require_loop();
  ScratchLoop loop(256);
  // Fresh and empty, but a device the harness did not create: only with allow_overwrite.
  CHECK_THAT(refusal(loop.device), Catch::Contains("no filesystem or partition-table signature"));
  CHECK_NOTHROW(guard_device(loop.device, true));
  sh({"mkfs.btrfs", "-f", loop.device.string()});
  CHECK_THAT(refusal(loop.device), Catch::Contains("btrfs at 0x10040"));
  CHECK_NOTHROW(guard_device(loop.device, true));
  // ... and then the device kind formats and mounts it.
  nlohmann::json d;
  {
    auto btrfs = Filesystem::create(device_request(loop.device, true));
    d = btrfs->describe();
    CHECK(d["kind"] == "device");
    CHECK(d["size_mib"] == 256);
    CHECK(mount_at(btrfs->mount_point()));
  }
  CHECK_FALSE(mount_at(d["mount_point"].get<std::string>()));
  CHECK(loop_attached(loop.device));  // not ours to detach
  CHECK_THROWS_AS(Filesystem::create(device_request(loop.device, false)), ks::UserError);
}

TEST_CASE("storage: a device of random data without a signature is refused and left intact",
          "[storage][root]") {
  require_loop();
  // Data the size of the first 64 MiB (past the btrfs superblocks mkfs would write), no
  // signature for wipefs to find.
  std::string data(64 << 20, '\0');
  {
    std::ifstream random("/dev/urandom", std::ios::binary);
    REQUIRE(random.read(data.data(), static_cast<std::streamsize>(data.size())));
  }
  ScratchLoop loop(256, false, data);
  REQUIRE(ks::trim(sh({"wipefs", "--no-act", "--noheadings", loop.device.string()}).out).empty());
  auto what = refusal(loop.device);
  CHECK_THAT(what, Catch::Contains("no filesystem or partition-table signature"));
  CHECK_THROWS_AS(Filesystem::create(device_request(loop.device, false)), ks::UserError);
  auto with_label = device_request(loop.device, false);
  with_label.label = "ksandwich-0123456789abcdef";  // a run's mark does not stand in for allow_overwrite
  CHECK_THROWS_AS(Filesystem::create(with_label), ks::UserError);
  std::string now(data.size(), '\0');
  {
    std::ifstream back(loop.file, std::ios::binary);
    REQUIRE(back.read(now.data(), static_cast<std::streamsize>(now.size())));
  }
  CHECK(now == data);  // not a byte changed
}

TEST_CASE("storage: a run labels its btrfs and recognises it at its next point", "[storage][root]") {
  require_loop();
  ScratchLoop loop(256);
  const std::string label = "ksandwich-0123456789abcdef";
  auto first = device_request(loop.device, true);
  first.label = label;
  nlohmann::json d;
  {
    auto btrfs = Filesystem::create(first);
    d = btrfs->describe();
    CHECK(d["label"] == label);
  }
  CHECK_THAT(sh({"btrfs", "inspect-internal", "dump-super", loop.device.string()}).out, Catch::Contains(label));
  // The next point (or a --resume) of the same run: its own filesystem, formatted again.
  auto again = device_request(loop.device, false);
  again.label = label;
  {
    auto btrfs = Filesystem::create(again);
    CHECK(mount_at(btrfs->mount_point()));
  }
  // Another run's label, or none: a device with data, refused without allow_overwrite.
  auto other = device_request(loop.device, false);
  other.label = "ksandwich-fedcba9876543210";
  CHECK_THROWS_AS(Filesystem::create(other), ks::UserError);
  CHECK_THAT(refusal(loop.device), Catch::Contains("btrfs label \"" + label + "\""));
  // A user's mkfs option cannot take the mark away: the run's --label comes last.
  auto relabel = device_request(loop.device, true);
  relabel.label = label;
  relabel.mkfs_options = {"-L", "someone-else"};
  { auto btrfs = Filesystem::create(relabel); }
  CHECK_NOTHROW(guard_device(loop.device, false, label));
}

TEST_CASE("storage: guard refuses a disk with a partition table or a mounted partition",
          "[storage][root]") {
  require_loop();
  KS_SKIP_UNLESS(ks::proc::have_program("partx"), "partx (util-linux) is missing");
  ScratchLoop loop(256, /*partscan=*/true);
  // A DOS partition table by hand (sfdisk is not installed): one Linux partition, 1 MiB..end.
  {
    unsigned char mbr[512] = {};
    unsigned char* p = mbr + 446;
    p[4] = 0x83;
    uint32_t start = 2048, sectors = (256u << 11) - 2048;
    for (int i = 0; i < 4; ++i) p[8 + i] = (start >> (8 * i)) & 0xff;
    for (int i = 0; i < 4; ++i) p[12 + i] = (sectors >> (8 * i)) & 0xff;
    mbr[510] = 0x55;
    mbr[511] = 0xaa;
    int fd = open(loop.device.c_str(), O_WRONLY);
    REQUIRE(fd >= 0);
    REQUIRE(pwrite(fd, mbr, sizeof mbr, 0) == 512);
    fsync(fd);
    close(fd);
    // partx adds the partition through BLKPG, so this works even in a kernel built without
    // partition-table parsers (like this machine's: no CONFIG_MSDOS_PARTITION).
    sh({"partx", "--add", loop.device.string()});
  }
  fs::path part = loop.device.string() + "p1";
  for (int i = 0; i < 50 && !fs::exists(part); ++i) std::this_thread::sleep_for(100ms);
  REQUIRE(fs::exists(part));
  CHECK_THAT(refusal(loop.device), Catch::Contains("dos at 0x1fe"));
  sh({"mkfs.btrfs", "-f", part.string()});
  loop.mount(part);
  CHECK_THAT(refusal(loop.device, true), Catch::Contains("is mounted (on " + loop.mounted[0].string()));
  CHECK_THAT(refusal(part, true), Catch::Contains("is mounted"));
}

TEST_CASE("storage: guard refuses the unmounted-looking member of a mounted btrfs",
          "[storage][root]") {
  require_loop();
  // The second device of a two-device btrfs never shows up in mountinfo; only the kernel's
  // exclusive claim on it tells that it is in use.
  ScratchLoop first(256), second(256);
  sh({"mkfs.btrfs", "-f", first.device.string(), second.device.string()});
  first.mount(first.device);
  auto what = refusal(second.device, true);
  CHECK_THAT(what, Catch::Contains("cannot be opened exclusively"));
  CHECK_THAT(what, Catch::Contains(second.device.string()));
}

TEST_CASE("storage: a busy mount is unmounted lazily, and it says so", "[storage][root]") {
  require_loop();
  nlohmann::json d;
  std::string warnings;
  int busy = -1;
  {
    auto btrfs = Filesystem::create(request("loop"));
    d = btrfs->describe();
    busy = open((btrfs->mount_point() / "held-open").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    REQUIRE(busy >= 0);
    // Capture what the destructor prints on stderr.
    char log[] = "/dev/shm/ksandwich-test-stderr-XXXXXX";
    int log_fd = mkstemp(log);
    REQUIRE(log_fd >= 0);
    int saved = dup(STDERR_FILENO);
    dup2(log_fd, STDERR_FILENO);
    btrfs.reset();
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(log_fd);
    warnings = ks::read_file(log);
    fs::remove(log);
  }
  INFO(warnings);
  CHECK_THAT(warnings, Catch::Contains("umount -l"));
  CHECK_FALSE(mount_at(d["mount_point"].get<std::string>()));
  CHECK_FALSE(fs::exists(d["mount_point"].get<std::string>()));
  CHECK_FALSE(fs::exists(d["backing_file"].get<std::string>()));
  close(busy);  // the last user goes: the filesystem and then the loop device are released
  fs::path dev = d["device"].get<std::string>();
  for (int i = 0; i < 50 && loop_attached(dev); ++i) std::this_thread::sleep_for(100ms);
  CHECK_FALSE(loop_attached(dev));
}

TEST_CASE("storage: guard refuses a device used as swap", "[storage][root]") {
  require_loop();
  KS_SKIP_UNLESS(ks::proc::have_program("mkswap") && ks::proc::have_program("swapon"),
                 "mkswap/swapon missing");
  ScratchLoop loop(32);
  sh({"mkswap", loop.device.string()});
  struct SwapOff {
    fs::path dev;
    ~SwapOff() { ks::proc::run(cmd({"swapoff", dev.string()})); }
  } swapoff{loop.device};
  sh({"swapon", "--priority", "-100", loop.device.string()});
  CHECK_THAT(refusal(loop.device, true), Catch::Contains("swap"));
}

TEST_CASE("storage: guard refuses the root device, regular files and missing paths",
          "[storage][root]") {
  require_storage_tools();
  std::optional<MountEntry> root;
  for (auto& e : mounts())
    if (e.mount_point == "/") root = e;
  REQUIRE(root);
  KS_SKIP_UNLESS(ks::starts_with(root->source, "/dev/") && fs::exists(root->source),
                 "/ is not on a block device here (" + root->source + ")");
  fs::path root_dev = root->source;
  CHECK_THAT(refusal(root_dev, true), Catch::Contains("root filesystem"));
  // The same device through its /dev/block/M:m alias.
  fs::path alias = "/dev/block/" + root->dev.str();
  if (root->dev.major != 0 && fs::exists(alias))
    CHECK_THAT(refusal(alias, true), Catch::Contains("root filesystem"));
  CHECK_THROWS_AS(Filesystem::create(device_request(root_dev, true)),
                  ks::UserError);

  CHECK_THAT(refusal("/etc/hostname", true), Catch::Contains("not a block device"));
  CHECK_THAT(refusal("/dev/shm", true), Catch::Contains("not a block device"));
  CHECK_THAT(refusal("/dev/no-such-disk", true), Catch::Contains("does not exist"));
  CHECK_THROWS_AS(Filesystem::create(request("device")), ks::UserError);
}

TEST_CASE("storage: SIGINT during a command after create() cleans up", "[storage][root]") {
  require_loop();
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // Child: what a run does. The handler turns SIGINT into Interrupted at the next run().
    close(fds[0]);
    int code = 10;
    try {
      ks::proc::install_interrupt_handlers();
      auto btrfs = Filesystem::create(request("loop"));
      auto line = btrfs->describe().dump() + "\n";
      (void)!write(fds[1], line.data(), line.size());
      auto sleep = cmd({"sleep", "60"});
      sleep.cleanup = false;  // an ordinary command: SIGINT interrupts it
      ks::proc::run(sleep);
      code = 11;  // the sleep finished: SIGINT was not seen
    } catch (const ks::Interrupted&) {
      code = 0;  // Filesystem's destructor has run by now
    } catch (...) {
      code = 12;
    }
    _exit(code);
  }
  // Whatever fails below, the child is interrupted and reaped (and so cleans up).
  struct Reap {
    pid_t pid;
    bool done = false;
    ~Reap() {
      if (done) return;
      kill(pid, SIGINT);
      waitpid(pid, nullptr, 0);
    }
  } reap{child};
  close(fds[1]);
  std::string line;
  char c;
  while (read(fds[0], &c, 1) == 1 && c != '\n') line += c;
  close(fds[0]);
  REQUIRE_FALSE(line.empty());
  auto d = nlohmann::json::parse(line);
  CHECK(mount_at(d["mount_point"].get<std::string>()));
  std::this_thread::sleep_for(300ms);  // let the child reach the sleep
  auto start = std::chrono::steady_clock::now();
  kill(child, SIGINT);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  reap.done = true;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(seconds < 30);
  require_gone(d);
}

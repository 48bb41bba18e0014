#include "storage/storage.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <thread>

#include "proc/runner.hpp"
#include "storage/facts.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/journal.hpp"
#include "util/progress.hpp"

namespace ks::storage {
namespace {

using namespace std::chrono_literals;

const fs::path kZramControl = "/sys/class/zram-control";
const fs::path kMountRoot = "/run/ksandwich";

proc::Command command(std::vector<std::string> argv, std::chrono::milliseconds timeout) {
  proc::Command cmd;
  cmd.argv = std::move(argv);
  cmd.timeout = timeout;
  return cmd;
}

proc::Result run(std::vector<std::string> argv, std::chrono::milliseconds timeout) {
  return proc::run_checked(command(std::move(argv), timeout));
}

// Cleanups run even after SIGINT/SIGTERM; they return the result so callers can retry.
proc::Result run_cleanup(std::vector<std::string> argv) {
  auto cmd = command(std::move(argv), 60s);
  cmd.cleanup = true;
  return proc::run(cmd);
}

void wait_for_block_device(const fs::path& path) {
  struct stat st{};
  for (int i = 0; i < 100; ++i) {
    if (stat(path.c_str(), &st) == 0 && S_ISBLK(st.st_mode)) return;
    std::this_thread::sleep_for(50ms);
  }
  throw SystemError("wait for " + path.string(), "the block device node did not appear within 5 s");
}

uint64_t device_size_mib(const fs::path& device) {
  auto name = fs::canonical(device).filename();
  auto sectors = read_first_line("/sys/class/block" / name / "size", "0");
  return std::stoull(sectors) * 512 / (1024 * 1024);
}

}  // namespace

bool is_mount_point(const fs::path& dir) {
  for (auto& e : parse_mountinfo(try_read_file("/proc/self/mountinfo").value_or("")))
    if (e.mount_point == dir.string()) return true;
  return false;
}

// Unmount, retrying once (a just-finished workload may still hold a reference for a moment).
// A lazy unmount is the last resort, and it is said out loud: the device may stay busy.
void unmount(const fs::path& mount_point, bool lazily_if_busy) {
  if (!is_mount_point(mount_point)) return;
  auto r = run_cleanup({"umount", mount_point.string()});
  if (r.ok()) return;
  std::this_thread::sleep_for(500ms);
  r = run_cleanup({"umount", mount_point.string()});
  if (r.ok()) return;
  if (!lazily_if_busy)
    throw SystemError("unmount " + mount_point.string(),
                      r.describe() + " (a process still uses it: see `fuser -vm " + mount_point.string() + "`)");
  progress::say("ksandwich: warning: " + r.describe() +
                "; unmounting lazily with umount -l, the device may stay busy until its last user exits");
  auto lazy = run_cleanup({"umount", "-l", mount_point.string()});
  if (!lazy.ok()) throw SystemError("unmount " + mount_point.string(), lazy.describe());
}

void detach_loops_backed_by(const fs::path& file) {
  auto r = run_cleanup({"losetup", "--noheadings", "--output", "NAME", "--associated", file.string()});
  if (!r.ok()) throw SystemError("find loop devices on " + file.string(), r.describe());
  for (auto& name : split(r.out, '\n')) {
    if (trim(name).empty()) continue;
    auto detach = run_cleanup({"losetup", "--detach", trim(name)});
    if (!detach.ok()) throw SystemError("detach " + trim(name), detach.describe());
  }
}

int detach_loops_backed_by_inode(const std::string& dev, uint64_t ino) {
  auto r = run_cleanup({"losetup", "--list", "--noheadings", "--output", "NAME,BACK-INO,BACK-MAJ:MIN"});
  if (!r.ok()) throw SystemError("list loop devices", r.describe());
  int detached = 0;
  for (auto& line : split(r.out, '\n')) {
    std::vector<std::string> cols;
    for (auto& c : split(line, ' '))
      if (!trim(c).empty()) cols.push_back(trim(c));
    if (cols.size() != 3 || cols[1] != std::to_string(ino) || cols[2] != dev) continue;
    auto detach = run_cleanup({"losetup", "--detach", cols[0]});
    if (!detach.ok()) throw SystemError("detach " + cols[0], detach.describe());
    ++detached;
  }
  return detached;
}

void remove_zram(const std::string& id) {
  for (int attempt = 0;; ++attempt) {
    try {
      write_file(kZramControl / "hot_remove", id);
      return;
    } catch (const SystemError&) {
      if (attempt == 1) throw;
      std::this_thread::sleep_for(500ms);
    }
  }
}

void unload_brd() {
  if (!fs::exists("/sys/module/brd")) return;
  auto r = run_cleanup({"rmmod", "brd"});
  if (r.ok()) return;
  std::this_thread::sleep_for(500ms);
  r = run_cleanup({"rmmod", "brd"});
  if (!r.ok()) throw SystemError("unload brd", r.describe());
}

namespace {

std::vector<std::string> unique(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (auto& item : items)
    if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
  return out;
}

// "[lzo-rle] lzo lz4" -> "lzo-rle"
std::string selected_choice(const std::string& line) {
  auto open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return trim(line);
  return line.substr(open + 1, close - open - 1);
}

Availability probe_availability(const std::string& requested) {
  Availability a;
  a.brd_present = fs::exists("/dev/ram0");
  if ((requested == "auto" || requested == "brd") && !fs::exists("/sys/module/brd") &&
      proc::have_program("modprobe"))
    a.brd_loadable = proc::run(command({"modprobe", "--dry-run", "--quiet", "brd"}, 10s)).ok();
  a.zram = fs::exists(kZramControl / "hot_add");
  a.loop = fs::exists("/dev/loop-control") && proc::have_program("losetup");
  return a;
}

}  // namespace

std::string run_label(const std::string& run_id) { return "ksandwich-" + run_id; }

std::optional<std::string> existing_run_id(const fs::path& run_dir) {
  auto path = run_dir / "run-id";
  std::optional<std::string> text;
  try {
    text = read_regular_file(path, 4096, Links::refuse);
  } catch (const SystemError& err) {
    throw UserError(std::string(err.what()), "the run directory was changed by hand: start a new run with --out NEWDIR");
  }
  if (!text) return std::nullopt;
  auto id = trim(*text);
  if (id.size() != 16 || id.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw UserError(path.string() + " does not hold a run id (16 hex digits)",
                    "it was changed by hand: put it back, or start a new run with --out NEWDIR");
  return id;
}

std::string run_id(const fs::path& run_dir) {
  if (auto id = existing_run_id(run_dir)) return *id;
  std::random_device random;
  std::string id;
  for (int i = 0; i < 2; ++i) {
    char part[9];
    std::snprintf(part, sizeof part, "%08x", static_cast<unsigned>(random()));
    id += part;
  }
  write_file_atomic(run_dir / "run-id", id + "\n");
  return id;
}

std::string resolve_kind(const std::string& requested) {
  return resolve_kind(requested, probe_availability(requested));
}

struct Filesystem::State {
  struct Undo {
    std::string what;
    uint64_t journaled;  // the journal entry this puts back (0: none)
    std::function<void()> action;
  };

  Request request;
  std::string kind;
  fs::path device;
  fs::path mount_point;
  uint64_t size_mib = 0;
  std::string mkfs_version;
  std::string kernel_mount_options;
  nlohmann::json details = nlohmann::json::object();  // per-kind facts
  std::vector<Undo> undo;  // in creation order; each action is a no-op if nothing was made

  // Steps that can be interrupted halfway (modprobe, losetup, mount) register their undo
  // before they run; such an undo checks what is there and does nothing if nothing was made.
  // JOURNALED: the journal entry (util/journal) recorded just before the change.
  void on_undo(std::string what, uint64_t journaled, std::function<void()> action) {
    undo.push_back({std::move(what), journaled, std::move(action)});
  }

  ~State() {
    for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
      try {
        it->action();
        journal::record_undone(it->journaled);
      } catch (const std::exception& e) {
        progress::say("ksandwich: cleanup failed: " + it->what + ": " + e.what());
      } catch (...) {
        progress::say("ksandwich: cleanup failed: " + it->what);
      }
    }
  }

  void create_brd() {
    if (fs::exists("/dev/ram0")) {
      // Someone else's ram disk (or a built-in one): treat it as a device the user named.
      guard_device("/dev/ram0", request.allow_overwrite, request.label);
      details["loaded_by_us"] = false;
    } else if (fs::exists("/sys/module/brd")) {
      throw UserError("storage kind brd: brd is loaded but /dev/ram0 does not exist",
                      "unload it (rmmod brd) so the harness can load it with the size it needs, "
                      "or use storage kind zram or loop");
    } else {
      on_undo("unload brd", journal::record("brd", {{"size_mib", request.size_mib}}), [] { unload_brd(); });
      run({"modprobe", "brd", "rd_nr=1", "rd_size=" + std::to_string(request.size_mib * 1024)},
          60s);
      details["loaded_by_us"] = true;
    }
    device = "/dev/ram0";
    wait_for_block_device(device);
  }

  void create_zram() {
    auto journaled = journal::record("zram", {{"size_mib", request.size_mib}});
    auto id = trim(read_file(kZramControl / "hot_add"));
    journal::amend(journaled, {{"id", id}});
    on_undo("remove zram" + id, journaled, [id] { remove_zram(id); });
    write_file("/sys/block/zram" + id + "/disksize", std::to_string(request.size_mib) + "M");
    device = "/dev/zram" + id;
    wait_for_block_device(device);
    details["comp_algorithm"] =
        selected_choice(read_first_line("/sys/block/zram" + id + "/comp_algorithm"));
  }

  void create_loop() {
    fs::path file = fresh_name(request.scratch_dir, "ksandwich-loop-");
    auto journaled = journal::record("file", {{"path", file.string()}});
    int fd = open(file.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) throw SystemError("create loop backing file " + file.string(), errno);
    const auto made = journal::identity_of(file);
    journal::amend(journaled, made);
    on_undo("remove " + file.string(), journaled, [file] { fs::remove(file); });
    int rc = ftruncate(fd, static_cast<off_t>(request.size_mib * 1024 * 1024));
    int err = errno;
    close(fd);
    if (rc != 0) throw SystemError("size " + file.string(), err);
    on_undo("detach loop devices on " + file.string(),
            journal::record("loop", {{"backing_file", file.string()}, {"backing", made}}),
            [file] { detach_loops_backed_by(file); });
    device = trim(run({"losetup", "--find", "--show", file.string()}, 60s).out);
    details["backing_file"] = file.string();
    details["direct_io"] =
        read_first_line("/sys/block/" + device.filename().string() + "/loop/dio") == "1";
  }

  void use_named_device() {
    if (request.device.empty())
      throw UserError("storage kind device needs storage.device",
                      "name the block device to format, or use storage kind auto");
    guard_device(request.device, request.allow_overwrite, request.label);
    device = request.device;
  }

  void make_and_mount() {
    mkfs_version = trim(run({"mkfs.btrfs", "--version"}, 30s).out);
    std::vector<std::string> mkfs{"mkfs.btrfs", "-f"};
    mkfs.insert(mkfs.end(), request.mkfs_options.begin(), request.mkfs_options.end());
    if (!request.label.empty()) {  // after the options: the run's mark wins
      mkfs.push_back("--label");
      mkfs.push_back(request.label);
    }
    mkfs.push_back(device.string());
    run(mkfs, 10min);

    fs::create_directories(kMountRoot);
    // Canonical, so the path matches what /proc/self/mountinfo will say.
    fs::path mp = fresh_name(fs::canonical(kMountRoot), "mnt-");
    auto made_dir = journal::record("dir", {{"path", mp.string()}});
    if (mkdir(mp.c_str(), 0700) != 0) throw SystemError("create the mount point " + mp.string(), errno);
    on_undo("remove " + mp.string(), made_dir, [mp] { fs::remove(mp); });
    auto mounted = journal::record(
        "mount", {{"target", mp.string()}, {"source", fs::weakly_canonical(device).string()}, {"fstype", "btrfs"}});
    on_undo("unmount " + mp.string(), mounted, [mp] { unmount(mp); });
    std::vector<std::string> mount{"mount", "-t", "btrfs"};
    if (!request.mount_options.empty()) {
      mount.push_back("-o");
      mount.push_back(join(request.mount_options, ","));
    }
    mount.push_back(device.string());
    mount.push_back(mp.string());
    run(mount, 2min);
    journal::amend(mounted, {{"mounted", journal::identity_of(mp)}});
    mount_point = mp;

    for (auto& e : parse_mountinfo(read_file("/proc/self/mountinfo")))
      if (e.mount_point == mp.string())
        kernel_mount_options = join(unique(split(e.mount_options + "," + e.super_options, ',')), ",");
  }
};

Filesystem::Filesystem(std::unique_ptr<State> state) : state_(std::move(state)) {}
Filesystem::~Filesystem() = default;  // State's destructor runs the undo stack

std::unique_ptr<Filesystem> Filesystem::create(const Request& request) {
  if (request.size_mib == 0 && request.kind != "device")
    throw UserError("storage size_mib must be positive", "btrfs needs at least about 128 MiB");
  auto state = std::make_unique<State>();  // if anything below throws, it undoes itself
  state->request = request;
  state->kind = resolve_kind(request.kind);
  if (state->kind == "brd") state->create_brd();
  else if (state->kind == "zram") state->create_zram();
  else if (state->kind == "loop") state->create_loop();
  else state->use_named_device();
  state->size_mib = device_size_mib(state->device);
  state->make_and_mount();
  return std::unique_ptr<Filesystem>(new Filesystem(std::move(state)));
}

const fs::path& Filesystem::mount_point() const { return state_->mount_point; }
const fs::path& Filesystem::device() const { return state_->device; }

nlohmann::json Filesystem::describe() const {
  const State& s = *state_;
  nlohmann::json j{{"kind", s.kind},
                   {"requested_kind", s.request.kind},
                   {"device", s.device.string()},
                   {"size_mib", s.size_mib},
                   {"mkfs_options", s.request.mkfs_options},
                   {"mount_options", s.request.mount_options},
                   {"kernel_mount_options", s.kernel_mount_options},
                   {"mkfs_version", s.mkfs_version},
                   {"mount_point", s.mount_point.string()},
                   {"label", s.request.label}};
  j.update(s.details);
  return j;
}

}  // namespace ks::storage

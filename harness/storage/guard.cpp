// The impure half of the storage guard: small readers of /proc, /sys, wipefs and an
// exclusive open, feeding DeviceFacts to the pure judge_device().
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <set>

#include "proc/runner.hpp"
#include "storage/facts.hpp"
#include "storage/storage.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/ownership.hpp"

namespace ks::storage {
namespace {

using DevSet = std::set<DevNum>;

std::optional<DevNum> block_devnum(const fs::path& path) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0 || !S_ISBLK(st.st_mode)) return std::nullopt;
  return DevNum{major(st.st_rdev), minor(st.st_rdev)};
}

// /sys/devices/... directory of a block device; empty when the kernel does not know it.
fs::path sysfs_dir(DevNum dev) {
  std::error_code ec;
  auto dir = fs::canonical("/sys/dev/block/" + dev.str(), ec);
  return ec ? fs::path() : dir;
}

std::string kernel_name(DevNum dev) {
  auto dir = sysfs_dir(dev);
  return dir.empty() ? dev.str() : "/dev/" + dir.filename().string();
}

std::vector<std::string> dir_names(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto& entry : fs::directory_iterator(dir, ec)) names.push_back(entry.path().filename());
  return names;
}

std::optional<DevNum> devnum_of_sysfs(const fs::path& dir) {
  return parse_devnum(read_first_line(dir / "dev"));
}

bool is_partition(const fs::path& dir) { return fs::exists(dir / "partition"); }

DevSet partitions_of(DevNum disk) {
  DevSet parts;
  auto dir = sysfs_dir(disk);
  std::error_code ec;
  if (dir.empty()) return parts;
  for (auto& entry : fs::directory_iterator(dir, ec))
    if (is_partition(entry.path()))
      if (auto d = devnum_of_sysfs(entry.path())) parts.insert(*d);
  return parts;
}

// The devices a device is built from (dm, md), recursively.
DevSet slaves_of(DevNum dev) {
  DevSet out;
  auto dir = sysfs_dir(dev);
  if (dir.empty()) return out;
  for (auto& name : dir_names(dir / "slaves"))
    if (auto d = devnum_of_sysfs("/sys/class/block/" + name)) {
      out.insert(*d);
      out.merge(slaves_of(*d));
    }
  return out;
}

// A device, its partitions and what it is built from.
DevSet lineage(DevNum dev) {
  DevSet out{dev};
  out.merge(partitions_of(dev));
  out.merge(slaves_of(dev));
  return out;
}

// Everything that shares a disk with DEV: the whole disk and all of its partitions, for DEV
// and for every device DEV is built from.
DevSet disk_relatives(DevNum dev) {
  DevSet out;
  DevSet members{dev};
  members.merge(slaves_of(dev));
  for (auto member : members) {
    auto dir = sysfs_dir(member);
    DevNum disk = member;
    if (!dir.empty() && is_partition(dir))
      if (auto parent = devnum_of_sysfs(dir.parent_path())) disk = *parent;
    out.insert(member);
    out.insert(disk);
    out.merge(partitions_of(disk));
  }
  return out;
}

std::vector<MountEntry> read_mountinfo() {
  return parse_mountinfo(try_read_file("/proc/self/mountinfo").value_or(""));
}

// btrfs (and anything else with an anonymous st_dev) reports 0:N in mountinfo; the source
// path then names the real device.
std::optional<DevNum> mount_device(const MountEntry& e) {
  if (e.dev.major != 0) return e.dev;
  if (starts_with(e.source, "/")) return block_devnum(e.source);
  return std::nullopt;
}

// The device(s) holding /, as mountinfo (last entry for "/", i.e. the visible one) and
// stat("/") report it.
DevSet root_devices() {
  DevSet out;
  std::optional<MountEntry> root;
  for (auto& e : read_mountinfo())
    if (e.mount_point == "/") root = e;
  if (root)
    if (auto d = mount_device(*root)) out.insert(*d);
  struct stat st{};
  if (stat("/", &st) == 0 && major(st.st_dev) != 0) out.insert(DevNum{major(st.st_dev), minor(st.st_dev)});
  return out;
}

// O_EXCL on a block device fails with EBUSY while the kernel holds it: a mounted
// filesystem (also a multi-device btrfs member), swap, dm, md.
bool refuses_exclusive_open(const fs::path& path) {
  int fd = open(path.c_str(), O_RDONLY | O_EXCL | O_CLOEXEC);
  if (fd >= 0) {
    close(fd);
    return false;
  }
  return errno == EBUSY;
}

void probe_signatures(const fs::path& device, DeviceFacts& facts) {
  if (!proc::have_program("wipefs")) {
    facts.probe_error = "wipefs (util-linux) is not installed";
    return;
  }
  proc::Command wipefs;
  wipefs.argv = {"wipefs", "--no-act", "--noheadings", "--output", "TYPE,OFFSET", device.string()};
  wipefs.timeout = std::chrono::seconds(60);
  auto r = proc::run(wipefs);
  if (!r.ok()) facts.probe_error = r.describe();
  else facts.signatures = parse_wipefs(r.out);
}

// The label of the btrfs on DEVICE, read from its superblock; empty if none or unreadable.
std::string read_btrfs_label(const fs::path& device) {
  int fd = open(device.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string super(kBtrfsSuperSize, '\0');
  auto n = pread(fd, super.data(), super.size(), static_cast<off_t>(kBtrfsSuperOffset));
  close(fd);
  if (n != static_cast<ssize_t>(super.size())) return {};
  return btrfs_label_of_superblock(super).value_or("");
}

DeviceFacts gather_facts(const fs::path& device) {
  DeviceFacts f;
  f.path = device.string();
  std::error_code ec;
  f.exists = fs::exists(device, ec);
  auto dev = block_devnum(device);
  f.is_block_device = dev.has_value();
  if (!dev) return f;

  auto mine = lineage(*dev);
  for (auto root : root_devices()) {
    auto relatives = disk_relatives(root);
    for (auto d : mine)
      if (relatives.count(d)) f.root_device = root == *dev ? f.path : kernel_name(root);
  }

  DevSet family{*dev};
  family.merge(partitions_of(*dev));
  for (auto& e : read_mountinfo())
    if (auto d = mount_device(e); d && family.count(*d)) f.mounted_at.push_back(e.mount_point);
  for (auto& swap : parse_swaps(try_read_file("/proc/swaps").value_or("")))
    if (auto d = block_devnum(swap); d && family.count(*d)) f.swap.push_back(swap);
  for (auto d : family) {
    auto dir = sysfs_dir(d);
    if (dir.empty()) continue;
    for (auto& holder : dir_names(dir / "holders")) f.holders.push_back("/dev/" + holder);
    fs::path node = "/dev/" + dir.filename().string();
    if (d == *dev) node = device;
    if (block_devnum(node) == d && refuses_exclusive_open(node)) f.busy.push_back(node.string());
  }
  probe_signatures(device, f);
  f.btrfs_label = read_btrfs_label(device);
  return f;
}

}  // namespace

void guard_device(const fs::path& device, bool allow_overwrite, const std::string& own_label) {
  // Judged now, formatted after the kernels are built, both by its name: no one else may be
  // able to point the name elsewhere in between (a link of theirs, a directory they may write).
  if (auto why = untrusted_on_the_way(device, PathRole::kDevice))
    throw UserError("storage.device " + device.string() + ": " + *why + ", and it would be formatted by that name",
                    "name the device as /dev/... (or a /dev/disk/by-id/ link), not through a place others can change");
  if (auto refusal = judge_device(gather_facts(device), allow_overwrite, own_label))
    throw UserError(refusal->what, refusal->hint);
}

}  // namespace ks::storage

#pragma once
// The pure half of the storage guard: parsers for what /proc and wipefs print, the facts
// the guard gathers about a device, and the decision made from them. No file or process is
// touched here, so every refusal can be unit-tested without root.
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks::storage {

// A block device number, as /proc/self/mountinfo and /sys/.../dev print it ("254:0").
struct DevNum {
  unsigned major = 0;
  unsigned minor = 0;
  auto operator<=>(const DevNum&) const = default;
  std::string str() const;
};
std::optional<DevNum> parse_devnum(std::string_view text);  // "254:0" (newline allowed)

struct MountEntry {
  DevNum dev;               // 0:N for filesystems without a single device (btrfs, tmpfs)
  std::string mount_point;  // octal escapes (\040) decoded
  std::string fstype;
  std::string source;       // "/dev/vda", "tmpfs", ...
  std::string mount_options;
  std::string super_options;
};
std::vector<MountEntry> parse_mountinfo(std::string_view text);

// The block devices or files named in /proc/swaps (header skipped, escapes decoded).
std::vector<std::string> parse_swaps(std::string_view text);

// `wipefs --no-act --noheadings --output TYPE,OFFSET`: one "type at offset" per signature.
std::vector<std::string> parse_wipefs(std::string_view text);

// Decodes the octal escapes the kernel uses for spaces and such in /proc files.
std::string unescape_octal(std::string_view s);

// What the guard learned about a device before deciding whether it may be formatted.
struct DeviceFacts {
  std::string path;
  bool exists = false;
  bool is_block_device = false;
  std::string root_device;               // the device holding / when this one is it (then equal
                                         // to path) or shares a disk with it; else empty
  std::vector<std::string> mounted_at;   // mount points of it or of one of its partitions
  std::vector<std::string> swap;         // swap entries on it or on a partition
  std::vector<std::string> holders;      // e.g. dm-0, md0 (from /sys/class/block/X/holders)
  std::vector<std::string> busy;         // it or a partition refused an exclusive open
  std::vector<std::string> signatures;   // filesystem or partition-table signatures
  std::string probe_error;               // wipefs could not probe it
  std::string btrfs_label;               // the label in its btrfs superblock, if it holds one
};

struct Refusal {
  std::string what;
  std::string hint;
};

// Why DEVICE must not be formatted, or nullopt when it may be. A device the harness did not
// create is formatted only with ALLOW_OVERWRITE, whatever it holds, signature or not (data
// without a signature is still data), or when it holds nothing but a btrfs labelled
// OWN_LABEL: the filesystem this run made on it for an earlier point. Never when it is the
// root disk, mounted, swap, held or busy.
std::optional<Refusal> judge_device(const DeviceFacts& facts, bool allow_overwrite,
                                    const std::string& own_label = {});

// The label of the btrfs whose primary superblock (64 KiB into the device) is SUPER, or
// nullopt when SUPER is not a btrfs superblock. Pure: SUPER is the bytes read.
std::optional<std::string> btrfs_label_of_superblock(std::string_view super);
constexpr uint64_t kBtrfsSuperOffset = 64 * 1024;
constexpr size_t kBtrfsSuperSize = 4096;

// Which RAM-backed kinds this machine offers.
struct Availability {
  bool brd_loadable = false;  // brd module exists and is not loaded yet: we can load and unload it
  bool brd_present = false;   // /dev/ram0 exists already (built in, or loaded by someone else)
  bool zram = false;          // /sys/class/zram-control/hot_add
  bool loop = false;          // /dev/loop-control and losetup
};

// auto -> brd (only when we can load it ourselves) -> zram -> loop. Explicit kinds are
// checked against AVAILABLE. Throws UserError for unknown or unavailable kinds.
std::string resolve_kind(const std::string& requested, const Availability& available);

}  // namespace ks::storage

#include "storage/facts.hpp"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::storage {
namespace {

std::vector<std::string> words(std::string_view line) {
  std::vector<std::string> out;
  std::istringstream in{std::string(line)};
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::vector<std::string_view> lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    auto end = text.find('\n');
    out.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return out;
}

bool parse_unsigned(std::string_view s, unsigned& value) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc() && ptr == s.data() + s.size() && !s.empty();
}

std::string list(const std::vector<std::string>& items) { return join(items, ", "); }

}  // namespace

std::string DevNum::str() const { return std::to_string(major) + ":" + std::to_string(minor); }

std::optional<DevNum> parse_devnum(std::string_view text) {
  auto t = trim(text);
  auto colon = t.find(':');
  if (colon == std::string::npos) return std::nullopt;
  DevNum d;
  if (!parse_unsigned(std::string_view(t).substr(0, colon), d.major) ||
      !parse_unsigned(std::string_view(t).substr(colon + 1), d.minor))
    return std::nullopt;
  return d;
}

std::string unescape_octal(std::string_view s) {
  auto is_octal = [](char c) { return c >= '0' && c <= '7'; };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() &&
        is_octal(s[i + 1]) && is_octal(s[i + 2]) && is_octal(s[i + 3])) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
// The optional fields between the options and "-" vary in number, hence the separator search.
std::vector<MountEntry> parse_mountinfo(std::string_view text) {
  std::vector<MountEntry> out;
  for (auto line : lines(text)) {
    auto w = words(line);
    size_t dash = 6;
    while (dash < w.size() && w[dash] != "-") ++dash;
    if (w.size() < 6 || dash + 2 >= w.size()) continue;
    auto dev = parse_devnum(w[2]);
    if (!dev) continue;
    MountEntry e;
    e.dev = *dev;
    e.mount_point = unescape_octal(w[4]);
    e.mount_options = w[5];
    e.fstype = w[dash + 1];
    e.source = unescape_octal(w[dash + 2]);
    if (dash + 3 < w.size()) e.super_options = w[dash + 3];
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<std::string> parse_swaps(std::string_view text) {
  std::vector<std::string> out;
  for (auto line : lines(text)) {
    auto w = words(line);
    if (w.empty() || w[0] == "Filename") continue;
    out.push_back(unescape_octal(w[0]));
  }
  return out;
}

std::vector<std::string> parse_wipefs(std::string_view text) {
  std::vector<std::string> out;
  for (auto line : lines(text)) {
    auto w = words(line);
    if (w.empty()) continue;
    out.push_back(w.size() >= 2 ? w[0] + " at " + w[1] : w[0]);
  }
  return out;
}

std::optional<Refusal> judge_device(const DeviceFacts& f, bool allow_overwrite, const std::string& own_label) {
  const std::string& d = f.path;
  const std::string use_ram =
      "or let the harness create a RAM device (storage kind auto, zram or loop)";
  if (!f.exists)
    return Refusal{"storage device " + d + " does not exist",
                   "check the path (lsblk lists block devices), " + use_ram};
  if (!f.is_block_device)
    return Refusal{"storage device " + d + " is not a block device",
                   "name a block device such as /dev/nvme1n1; for a file-backed filesystem use "
                   "storage kind loop"};
  if (!f.root_device.empty())
    return Refusal{"storage device " + d +
                       (f.root_device == d ? " holds" : " shares a disk with " + f.root_device + ", which holds") +
                       " the root filesystem /",
                   "the harness never formats the disk holding /: name a spare disk, " + use_ram};
  if (!f.mounted_at.empty())
    return Refusal{"storage device " + d + " is mounted (on " + list(f.mounted_at) + ")",
                   "unmount it first if its contents are disposable, or name another device"};
  if (!f.swap.empty())
    return Refusal{"storage device " + d + " is in use as swap (" + list(f.swap) + ")",
                   "run swapoff on it first if that swap is not needed, or name another device"};
  if (!f.holders.empty())
    return Refusal{"storage device " + d + " is held by " + list(f.holders) +
                       " (device-mapper, RAID or similar)",
                   "release it from " + list(f.holders) + " first, or name another device"};
  if (!f.busy.empty())
    return Refusal{"storage device " + d + " is in use: " + list(f.busy) +
                       " cannot be opened exclusively",
                   "stop whatever holds it open (fuser -v " + d + " may tell), or name another device"};
  if (allow_overwrite) return std::nullopt;
  const std::string opt_in = "if its contents are disposable, set storage.allow_overwrite = true; otherwise "
                             "name another device, " + use_ram;
  bool only_btrfs = std::all_of(f.signatures.begin(), f.signatures.end(),
                                [](auto& s) { return starts_with(s, "btrfs "); });
  if (!own_label.empty() && f.btrfs_label == own_label && only_btrfs && f.probe_error.empty())
    return std::nullopt;  // this run's own filesystem, from an earlier point
  if (!f.signatures.empty())
    return Refusal{"storage device " + d + " holds data (" + list(f.signatures) +
                       (f.btrfs_label.empty() ? "" : ", btrfs label \"" + f.btrfs_label + "\"") +
                       ") and storage.allow_overwrite is not set",
                   opt_in};
  if (!f.probe_error.empty())
    return Refusal{"cannot tell whether storage device " + d + " holds data: " + f.probe_error, opt_in};
  return Refusal{"storage device " + d + " shows no filesystem or partition-table signature, but data "
                     "without a signature is still data: a device the harness did not create is "
                     "formatted only with storage.allow_overwrite = true",
                 opt_in};
}

std::optional<std::string> btrfs_label_of_superblock(std::string_view super) {
  constexpr size_t kMagicOffset = 0x40, kLabelOffset = 0x12b, kLabelSize = 256;
  if (super.size() < kLabelOffset + kLabelSize || super.substr(kMagicOffset, 8) != "_BHRfS_M")
    return std::nullopt;
  auto label = super.substr(kLabelOffset, kLabelSize);
  return std::string(label.substr(0, label.find('\0')));
}

std::string resolve_kind(const std::string& requested, const Availability& a) {
  const std::string hint = "use storage kind auto to take the first available of brd, zram, loop";
  if (requested == "auto") {
    if (a.brd_loadable) return "brd";
    if (a.zram) return "zram";
    if (a.loop) return "loop";
    throw UserError("no RAM-backed block device is available (no brd module, no "
                    "/sys/class/zram-control, no /dev/loop-control)",
                    "enable CONFIG_BLK_DEV_RAM, CONFIG_ZRAM or CONFIG_BLK_DEV_LOOP, or name a "
                    "spare device with storage kind device");
  }
  if (requested == "brd") {
    if (a.brd_loadable || a.brd_present) return requested;
    throw UserError("storage kind brd: the running kernel has no brd (no /dev/ram0, no brd module)",
                    hint);
  }
  if (requested == "zram") {
    if (a.zram) return requested;
    throw UserError("storage kind zram: /sys/class/zram-control/hot_add is missing", hint);
  }
  if (requested == "loop") {
    if (a.loop) return requested;
    throw UserError("storage kind loop: /dev/loop-control or losetup is missing", hint);
  }
  if (requested == "device") return requested;
  throw UserError("unknown storage kind '" + requested + "'",
                  "storage kind must be one of auto, brd, zram, loop, device");
}

}  // namespace ks::storage

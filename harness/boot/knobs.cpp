#include "boot/knobs.hpp"

#include <linux/magic.h>
#include <sys/vfs.h>

#include <cstdio>

#include "util/error.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"
#include "util/journal.hpp"
#include "util/progress.hpp"

namespace ks::boot {
namespace {

const char* kHint = "name a knob that exists on this kernel under /sys/ or /proc/sys/ (arms/<arm>/sysfs)";

bool below(const fs::path& path, const fs::path& root) {
  auto p = path.lexically_normal().string(), r = root.lexically_normal().string();
  if (!r.empty() && r.back() == '/') r.pop_back();
  return p.size() > r.size() + 1 && p.compare(0, r.size(), r) == 0 && p[r.size()] == '/';
}

}  // namespace

fs::path resolve_knob(const std::string& path, const KnobRules& rules) {
  std::error_code ec;
  auto real = fs::canonical(path, ec);
  if (ec) throw UserError("sysfs knob " + path + " cannot be resolved: " + ec.message(), kHint);
  bool inside = false;
  for (auto& root : rules.roots) {
    auto real_root = fs::weakly_canonical(root, ec);
    if (!ec && below(real, real_root)) inside = true;
  }
  if (!inside)
    throw UserError("sysfs knob " + path + " resolves to " + real.string() +
                        ", which is not under " + [&] {
                          std::vector<std::string> names;
                          for (auto& r : rules.roots) names.push_back(r.string() + "/");
                          return join(names, " or ");
                        }(),
                    kHint);
  if (rules.require_kernel_fs) {
    struct statfs st{};
    if (statfs(real.c_str(), &st) != 0 ||
        (st.f_type != SYSFS_MAGIC && st.f_type != PROC_SUPER_MAGIC))
      throw UserError("sysfs knob " + path + " is not on sysfs or procfs", kHint);
  }
  if (!fs::is_regular_file(real, ec))
    throw UserError("sysfs knob " + path + " is not a file", kHint);
  return real;
}

KnobGuard::KnobGuard(const std::string& path, const std::string& value, const KnobRules& rules)
    : path_(path), resolved_(resolve_knob(path, rules)) {
  auto old = try_read_file(resolved_);
  if (!old) throw UserError("sysfs knob " + path + " cannot be read", kHint);
  old_ = std::move(*old);
  journaled_ = journal::record(
      "knob", {{"path", resolved_.string()}, {"old_hex", hex(old_)}, {"value", value}});
  try {
    write_file(resolved_, value);
  } catch (...) {  // nothing to restore, the value was not taken
    journal::record_undone(journaled_);
    throw;
  }
}

KnobGuard::~KnobGuard() {
  try {
    write_file(resolved_, old_);
    journal::record_undone(journaled_);
  } catch (const std::exception& e) {
    progress::say("ksandwich: warning: could not restore " + path_ + ": " + e.what());
  }
}

KnobSetting::KnobSetting(const std::map<std::string, std::string>& knobs, const KnobRules& rules) {
  for (auto& [path, value] : knobs) {
    guards_.set.push_back(std::make_unique<KnobGuard>(path, value, rules));
    applied_[path] = read_first_line(path);
  }
}

KnobSetting::~KnobSetting() = default;  // guards_ restores, last set first

}  // namespace ks::boot

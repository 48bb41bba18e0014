#pragma once
// An arm's /sys and /proc/sys knobs, set for one point and put back afterwards.
// - Confined: each path is resolved (symlinks and all) and must still lie under /sys or
//   /proc/sys, on sysfs or procfs, before anything is written.
// - Exact: the old value is kept as the bytes read, trailing newline included, and those
//   bytes are written back.
// - One guard per knob: if the second knob cannot be set, the first is already restored by
//   the time the exception leaves the constructor.
// - Journaled: each write is recorded in the run's journal (util/journal) before it is made,
//   with the old bytes, so `ksandwich cleanup` can put them back after a SIGKILL.
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ks::boot {

namespace fs = std::filesystem;

struct KnobRules {
  std::vector<fs::path> roots{"/sys", "/proc/sys"};  // a knob must resolve to below one of these
  bool require_kernel_fs = true;                      // ... and be on sysfs or procfs (tests: false)
};

// PATH resolved through every symlink; throws UserError when it does not exist or does not
// stay below one of RULES.roots.
fs::path resolve_knob(const std::string& path, const KnobRules& rules = {});

// Sets one knob; restores the exact old bytes when it goes. Never throws from the destructor.
class KnobGuard {
 public:
  KnobGuard(const std::string& path, const std::string& value, const KnobRules& rules = {});
  ~KnobGuard();
  KnobGuard(const KnobGuard&) = delete;
  KnobGuard& operator=(const KnobGuard&) = delete;
  const std::string& path() const { return path_; }
  const std::string& old_bytes() const { return old_; }

 private:
  std::string path_;     // as the experiment wrote it
  fs::path resolved_;    // where it was written
  std::string old_;      // exactly as read
  uint64_t journaled_ = 0;
};

// All knobs of an arm, set in order and restored in reverse.
class KnobSetting {
 public:
  explicit KnobSetting(const std::map<std::string, std::string>& knobs, const KnobRules& rules = {});
  ~KnobSetting();
  KnobSetting(const KnobSetting&) = delete;
  KnobSetting& operator=(const KnobSetting&) = delete;
  // path -> the first line read back after writing, for the bundle.
  const nlohmann::json& applied() const { return applied_; }

 private:
  struct Guards {
    std::vector<std::unique_ptr<KnobGuard>> set;
    ~Guards() {
      while (!set.empty()) set.pop_back();  // reverse order
    }
  } guards_;
  nlohmann::json applied_ = nlohmann::json::object();
};

}  // namespace ks::boot

#pragma once
// What the terminal shows while a kernel builds: which arm, which stage, how far and how
// long to go - never make's raw output (that goes to the build log). The line itself is the
// shared progress::Line (one updating line on a terminal, a throttled plain line in a log).
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/progress.hpp"

namespace ks::kernel {

// What an earlier build of the same kind tells about this one: how many files it compiled.
struct BuildEstimate {
  size_t compiled = 0;  // the earlier build's files compiled (CC/AS steps)
  std::string from;     // which build, for the reader ("same config", "nearest config", ...)
  double seconds = 0;   // the earlier build's wall clock (identity.json's build.seconds)
};

// Counts the compile steps in make's V=0 output ("  CC      fs/btrfs/ctree.o", "  AS ...")
// fed in chunks as they arrive. Pure.
class CompileCounter {
 public:
  // Returns whether a step was counted in CHUNK.
  bool feed(std::string_view chunk);
  size_t count() const { return files_.size(); }
  const std::vector<std::string>& files() const { return files_; }

 private:
  std::string partial_;
  std::vector<std::string> files_;
};

// "812 of ~1261 files compiled, ETA 3m10s"; "812 files compiled" without an estimate (or
// once the count passes it); "" before the first file. Pure.
std::string build_detail(size_t done, const std::optional<BuildEstimate>& estimate, double elapsed_s);

class Progress {
 public:
  // Reports to OUT (nullptr: silent). Live rewriting is used when OUT is a terminal.
  explicit Progress(std::FILE* out = stderr);
  explicit Progress(progress::LineOptions options);
  static Progress silent() { return Progress(nullptr); }

  // "[control] config" - a new stage of an arm starts; its clock starts at zero.
  void stage(const std::string& arm, const std::string& stage) const;
  // "[control] build 3m12s  812 of ~1261 files compiled, ETA 3m10s" - throttled; call as
  // often as you like.
  void tick(const std::string& detail = {}) const;
  // A line that stays: "[control] built 6.1.192-ks-control in 8m41s".
  void note(const std::string& message) const;
  // Seconds since the current stage started.
  double stage_seconds() const;

  static std::string format_duration(double seconds) { return progress::format_duration(seconds); }

 private:
  std::shared_ptr<progress::Line> line_;
  std::function<double()> now_;
  mutable std::string arm_, stage_;
  mutable double started_ = 0;
};

}  // namespace ks::kernel

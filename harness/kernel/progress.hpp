#pragma once
// What the terminal shows while a kernel builds: which arm, which stage, how long so far -
// never make's raw output (that goes to the build log). On a terminal one status line is
// rewritten in place; otherwise (CI logs) a line is printed per stage and every 30 s.
#include <chrono>
#include <cstdio>
#include <string>

namespace ks::kernel {

class Progress {
 public:
  // Reports to OUT (nullptr: silent). Live rewriting is used when OUT is a terminal.
  explicit Progress(std::FILE* out = stderr);
  static Progress silent() { return Progress(nullptr); }

  // "[control] config" - a new stage of an arm starts; its clock starts at zero.
  void stage(const std::string& arm, const std::string& stage) const;
  // "[control] build 3m12s  812 files compiled" - throttled; call as often as you like.
  void tick(const std::string& detail = {}) const;
  // A line that stays: "[control] built 6.1.192-ks-control in 8m41s".
  void note(const std::string& message) const;

  static std::string format_duration(double seconds);  // "8m41s", "23s", "1h02m"

 private:
  void print(const std::string& line, bool final) const;

  std::FILE* out_;
  bool live_;
  mutable std::string arm_, stage_;
  mutable std::chrono::steady_clock::time_point started_, last_print_;
  mutable bool line_open_ = false;
};

}  // namespace ks::kernel

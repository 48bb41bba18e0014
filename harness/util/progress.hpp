#pragma once
// The one progress line every long step shares (a kernel build, a point, the run).
//
// On a terminal (isatty) the status is one line rewritten in place ("\r", erased to the end
// of the line, cut to the terminal's width), at most every `live_interval_s`; any line that
// stays - a note, or a message from elsewhere through say() - first erases it. In a log (not
// a terminal) every status is a plain line, printed when `log_interval_s` has passed since the
// last one or when it marks a new phase (a milestone), never the same text twice in a row.
// The clock is injected so the throttling is tested without waiting. What is printed may hold
// a guest console's or a build's words: a status is one line, a note printable lines (no
// escape sequence reaches the terminal).
#include <cstdio>
#include <functional>
#include <optional>
#include <string>

namespace ks::progress {

// "23s", "8m41s", "1h02m".
std::string format_duration(double seconds);

// The seconds left for TOTAL units at the rate so far (DONE units in ELAPSED_S); none when
// nothing is done yet, no time has passed, or DONE already reaches TOTAL (the estimate of
// the total was too small: better no ETA than a wrong one).
std::optional<double> eta_seconds(double done, double total, double elapsed_s);

// " ETA 3m10s", or "" when there is none.
std::string eta_suffix(std::optional<double> seconds);

// "2 of 3 points done, ETA 1m20s"; UP_TO (the plan is a cap the run may stop before):
// "2 of up to 24 points done, at most 40m00s left". Pure.
std::string count_status(size_t done, size_t planned, const std::string& what, bool up_to,
                         std::optional<double> eta);

// TEXT cut to WIDTH columns (a trailing "..." marks the cut); WIDTH 0: not cut.
std::string fit(const std::string& text, size_t width);

struct LineOptions {
  std::FILE* out = stderr;            // nullptr: silent
  std::optional<bool> live = {};      // default: whether OUT is a terminal
  std::function<double()> now = {};   // monotonic seconds; default steady_clock
  double live_interval_s = 0.25;
  double log_interval_s = 10;
  size_t width = 0;                   // terminal columns; 0: asked of OUT (80 if unknown)
};

class Line {
 public:
  explicit Line(LineOptions options = {});
  static Line silent() { return Line(LineOptions{.out = nullptr}); }
  ~Line();
  Line(const Line&) = delete;
  Line& operator=(const Line&) = delete;

  // The current status; MILESTONE: a new phase (always shown on a terminal at once, and
  // printed in a log even within log_interval_s).
  void show(const std::string& status, bool milestone = false);
  // A line that stays, after erasing the status line.
  void note(const std::string& line);
  // Erases the status line (terminal), so other output starts at column 0.
  void clear();
  bool live() const { return live_; }

 private:
  LineOptions o_;
  bool live_ = false;
  double last_shown_ = -1e18;
  std::string last_text_;
};

// A line that stays on stderr, after erasing whatever status line is open there: what every
// message printed while a progress line may be showing goes through.
void say(const std::string& line);

}  // namespace ks::progress

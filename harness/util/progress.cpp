#include "util/progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>

#include "util/files.hpp"

namespace ks::progress {
namespace {

// The stream whose status line is open (shown and not yet erased): at most one per process.
std::FILE* g_open = nullptr;

void erase_open_line(std::FILE* out) {
  if (g_open != out || !out) return;
  std::fputs("\r\033[K", out);
  g_open = nullptr;
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

size_t columns(std::FILE* out) {
  winsize w{};
  if (out && ioctl(fileno(out), TIOCGWINSZ, &w) == 0 && w.ws_col > 0) return w.ws_col;
  return 80;
}

}  // namespace

std::string format_duration(double seconds) {
  long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%lds", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  return buf;
}

std::optional<double> eta_seconds(double done, double total, double elapsed_s) {
  if (done <= 0 || elapsed_s <= 0 || done >= total) return std::nullopt;
  return (total - done) * elapsed_s / done;
}

std::string eta_suffix(std::optional<double> seconds) {
  return seconds ? " ETA " + format_duration(*seconds) : "";
}

std::string count_status(size_t done, size_t planned, const std::string& what, bool up_to,
                         std::optional<double> eta) {
  std::string text = std::to_string(done) + " of " + (up_to ? "up to " : "") + std::to_string(planned) + " " +
                     what + " done";
  if (eta) text += up_to ? ", at most " + format_duration(*eta) + " left" : eta_suffix(eta).insert(0, ",");
  return text;
}

std::string fit(const std::string& text, size_t width) {
  if (width == 0 || text.size() <= width) return text;
  if (width <= 3) return text.substr(0, width);
  return text.substr(0, width - 3) + "...";
}

Line::Line(LineOptions options) : o_(std::move(options)) {
  live_ = o_.out && o_.live.value_or(isatty(fileno(o_.out)) == 1);
  if (!o_.now) o_.now = steady_seconds;
  if (live_ && o_.width == 0) o_.width = columns(o_.out);
}

Line::~Line() { clear(); }

void Line::show(const std::string& status, bool milestone) {
  if (!o_.out) return;
  double now = o_.now();
  double since = now - last_shown_;
  if (live_) {
    if (!milestone && since < o_.live_interval_s) return;
    // One column short of the width: a line that fills it wraps on some terminals.
    std::fprintf(o_.out, "\r\033[K%s", fit(one_line(status), o_.width > 1 ? o_.width - 1 : o_.width).c_str());
    g_open = o_.out;
  } else {
    if (status == last_text_ || (!milestone && since < o_.log_interval_s)) return;
    std::fprintf(o_.out, "%s\n", one_line(status).c_str());
  }
  std::fflush(o_.out);
  last_shown_ = now;
  last_text_ = status;
}

void Line::note(const std::string& line) {
  if (!o_.out) return;
  erase_open_line(o_.out);
  std::fprintf(o_.out, "%s\n", printable_lines(line).c_str());
  std::fflush(o_.out);
  // The status shows again at its next update, in a log too.
  last_text_.clear();
}

void Line::clear() {
  if (!o_.out || !live_) return;
  erase_open_line(o_.out);
  std::fflush(o_.out);
}

void say(const std::string& line) {
  erase_open_line(stderr);
  std::fprintf(stderr, "%s\n", printable_lines(line).c_str());
  std::fflush(stderr);
}

}  // namespace ks::progress

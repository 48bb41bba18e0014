#include "kernel/progress.hpp"

#include <unistd.h>

namespace ks::kernel {

using Clock = std::chrono::steady_clock;

Progress::Progress(std::FILE* out)
    : out_(out), live_(out && isatty(fileno(out))), started_(Clock::now()), last_print_() {}

std::string Progress::format_duration(double seconds) {
  long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%lds", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  return buf;
}

void Progress::print(const std::string& line, bool final) const {
  if (!out_) return;
  if (live_) {
    std::fprintf(out_, "\r\033[K%s%s", line.c_str(), final ? "\n" : "");
    line_open_ = !final;
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
  last_print_ = Clock::now();
}

void Progress::stage(const std::string& arm, const std::string& stage) const {
  arm_ = arm;
  stage_ = stage;
  started_ = Clock::now();
  print("[" + arm_ + "] " + stage_, false);
}

void Progress::tick(const std::string& detail) const {
  auto now = Clock::now();
  auto since = now - last_print_;
  if (since < (live_ ? std::chrono::seconds(1) : std::chrono::seconds(30))) return;
  double elapsed = std::chrono::duration<double>(now - started_).count();
  print("[" + arm_ + "] " + stage_ + " " + format_duration(elapsed) +
            (detail.empty() ? "" : "  " + detail),
        false);
}

void Progress::note(const std::string& message) const {
  if (!out_) return;
  if (live_ && line_open_) std::fprintf(out_, "\r\033[K");
  line_open_ = false;
  std::fprintf(out_, "%s\n", message.c_str());
  std::fflush(out_);
}

}  // namespace ks::kernel

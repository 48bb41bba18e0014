#include "kernel/progress.hpp"

#include <chrono>
#include <cctype>

namespace ks::kernel {
namespace {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// The file of kbuild's "  CC      fs/btrfs/inode.o" line; empty for any other line. A scan, not
// a regular expression (std::regex recurses per character, and a patched tree names its files).
std::string compiled_file(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && space(line[i])) ++i;
  if (i == 0 || line.size() < i + 2 || !(line.substr(i, 2) == "CC" || line.substr(i, 2) == "AS")) return {};
  size_t j = i + 2;
  if (j >= line.size() || !space(line[j])) return {};
  while (j < line.size() && space(line[j])) ++j;
  size_t end = j;
  while (end < line.size() && !space(line[end])) ++end;
  return std::string(line.substr(j, end - j));
}

}  // namespace

bool CompileCounter::feed(std::string_view chunk) {
  partial_ += chunk;
  bool counted = false;
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
    auto file = compiled_file(std::string_view(partial_).substr(start, nl - start));
    if (!file.empty()) {
      files_.push_back(std::move(file));
      counted = true;
    }
  }
  partial_.erase(0, start);
  return counted;
}

std::string build_detail(size_t done, const std::optional<BuildEstimate>& estimate, double elapsed_s) {
  if (done == 0) return "";
  if (!estimate || estimate->compiled == 0 || done >= estimate->compiled)
    return std::to_string(done) + " files compiled";
  auto eta = progress::eta_seconds(static_cast<double>(done), static_cast<double>(estimate->compiled), elapsed_s);
  return std::to_string(done) + " of ~" + std::to_string(estimate->compiled) + " files compiled" +
         (eta ? "," + progress::eta_suffix(eta) : "");
}

Progress::Progress(std::FILE* out) : Progress(progress::LineOptions{.out = out}) {}

Progress::Progress(progress::LineOptions options)
    : now_(options.now ? options.now : steady_seconds) {
  options.now = now_;
  line_ = std::make_shared<progress::Line>(std::move(options));
  started_ = now_();
}

double Progress::stage_seconds() const { return now_() - started_; }

void Progress::stage(const std::string& arm, const std::string& stage) const {
  arm_ = arm;
  stage_ = stage;
  started_ = now_();
  line_->show("[" + arm_ + "] " + stage_, true);
}

void Progress::tick(const std::string& detail) const {
  line_->show("[" + arm_ + "] " + stage_ + " " + format_duration(stage_seconds()) +
              (detail.empty() ? "" : "  " + detail));
}

void Progress::note(const std::string& message) const { line_->note(message); }

}  // namespace ks::kernel

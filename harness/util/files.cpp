#include "util/files.hpp"

#include <cerrno>
#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>

#include "util/error.hpp"

namespace ks {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SystemError("read " + path.string(), errno ? errno : ENOENT);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::optional<std::string> try_read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

bool read_file_contains(const fs::path& path, std::string_view needle) {
  auto content = try_read_file(path);
  return content && content->find(needle) != std::string::npos;
}

std::string read_first_line(const fs::path& path, std::string fallback) {
  auto content = try_read_file(path);
  if (!content) return fallback;
  return trim(content->substr(0, content->find('\n')));
}

void write_file(const fs::path& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw SystemError("open " + path.string() + " for writing", errno ? errno : EACCES);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  if (!out) throw SystemError("write " + path.string(), errno ? errno : EIO);
}

void write_file_append(const fs::path& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  if (!out) throw SystemError("open " + path.string() + " for appending", errno ? errno : EACCES);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
}

void write_file_atomic(const fs::path& path, std::string_view content) {
  fs::path tmp = path;
  tmp += ".tmp";
  write_file(tmp, content);
  fs::rename(tmp, path);
}

std::string trim(std::string_view s) {
  const char* ws = " \t\r\n";
  auto b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  auto e = s.find_last_not_of(ws);
  return std::string(s.substr(b, e - b + 1));
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    auto pos = s.find(sep, start);
    out.emplace_back(s.substr(start, pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::string now_utc_iso8601() {
  auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

ScopedDir::ScopedDir(fs::path path) : path_(std::move(path)) {
  std::error_code ec;
  fs::remove_all(path_, ec);
  fs::create_directories(path_);
}

ScopedDir::~ScopedDir() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace ks

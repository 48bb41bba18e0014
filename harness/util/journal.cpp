#include "util/journal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>

#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::journal {
namespace {

using nlohmann::json;

Journal* g_active = nullptr;

void write_all(int fd, std::string_view text, const fs::path& file) {
  while (!text.empty()) {
    ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw SystemError("append to " + file.string(), n < 0 ? errno : EIO);
    text.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

std::vector<Entry> Contents::pending() const {
  std::vector<Entry> out;
  for (auto it = entries.rbegin(); it != entries.rend(); ++it)
    if (!undone.count(it->seq)) out.push_back(*it);
  return out;
}

Contents read(const fs::path& file) {
  Contents c;
  auto text = try_read_file(file);
  if (!text) {
    if (fs::exists(file)) throw SystemError("read " + file.string(), EACCES);
    return c;
  }
  for (auto& line : split(*text, '\n')) {
    if (trim(line).empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      ++c.torn_lines;
      continue;
    }
    try {
      if (j.contains("seq")) {
        Entry e;
        e.seq = j.at("seq").get<uint64_t>();
        e.kind = j.at("kind").get<std::string>();
        e.data = j.value("data", json::object());
        e.pid = j.value("pid", 0);
        e.pid_start = j.value("pid_start", uint64_t{0});
        c.entries.push_back(std::move(e));
      } else if (j.contains("amend")) {
        auto seq = j.at("amend").get<uint64_t>();
        for (auto& e : c.entries)
          if (e.seq == seq) e.data.update(j.value("data", json::object()));
      } else if (j.contains("undone")) {
        c.undone.insert(j.at("undone").get<uint64_t>());
      }
    } catch (const json::exception&) {
      ++c.torn_lines;
    }
  }
  return c;
}

std::string to_hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

std::string from_hex(std::string_view hex) {
  auto value = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    throw std::invalid_argument("not a hex digit");
  };
  if (hex.size() % 2) throw std::invalid_argument("odd number of hex digits");
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2)
    out += static_cast<char>(value(hex[i]) * 16 + value(hex[i + 1]));
  return out;
}

std::optional<uint64_t> process_start(int pid) {
  auto stat = try_read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return std::nullopt;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses; fields count from
  // after the last ')'. starttime is field 22, the 20th after it.
  auto close = stat->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::vector<std::string> fields;
  for (auto& f : split(stat->substr(close + 1), ' '))
    if (!f.empty()) fields.push_back(f);
  if (fields.size() < 20) return std::nullopt;
  if (fields[0] == "Z" || fields[0] == "X") return std::nullopt;  // dead, not yet reaped
  try {
    return std::stoull(fields[19]);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool maker_alive(const Entry& entry) {
  if (entry.pid <= 0) return false;
  auto start = process_start(entry.pid);
  return start && *start == entry.pid_start;
}

Journal::Journal(fs::path file) : file_(std::move(file)) {
  auto existing = read(file_);
  for (auto& e : existing.entries) next_ = std::max(next_, e.seq + 1);
  for (auto seq : existing.undone) next_ = std::max(next_, seq + 1);
  fd_ = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw SystemError("open the journal " + file_.string(), errno);
  // A line torn by a killed writer must not swallow the next one.
  auto text = try_read_file(file_).value_or("");
  if (!text.empty() && text.back() != '\n') write_all(fd_, "\n", file_);
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

void Journal::append(const json& line) {
  write_all(fd_, line.dump() + "\n", file_);
  if (::fsync(fd_) != 0) throw SystemError("fsync " + file_.string(), errno);
}

uint64_t Journal::change(const std::string& kind, json data) {
  std::lock_guard lock(mutex_);
  uint64_t seq = next_++;
  append({{"seq", seq},
          {"kind", kind},
          {"data", std::move(data)},
          {"pid", static_cast<int>(getpid())},
          {"pid_start", process_start(getpid()).value_or(0)},
          {"at", now_utc_iso8601()}});
  return seq;
}

void Journal::amend(uint64_t seq, json data) {
  std::lock_guard lock(mutex_);
  append({{"amend", seq}, {"data", std::move(data)}});
}

void Journal::undone(uint64_t seq, const std::string& how) {
  std::lock_guard lock(mutex_);
  append({{"undone", seq}, {"how", how}, {"at", now_utc_iso8601()}});
}

Active::Active(const fs::path& file) : journal_(file) { g_active = &journal_; }
Active::~Active() {
  if (g_active == &journal_) g_active = nullptr;
}

uint64_t record(const std::string& kind, json data) {
  return g_active ? g_active->change(kind, std::move(data)) : 0;
}

void amend(uint64_t seq, json data) {
  if (g_active && seq) g_active->amend(seq, std::move(data));
}

void record_undone(uint64_t seq) {
  if (!g_active || !seq) return;
  try {
    g_active->undone(seq);
  } catch (const std::exception&) {
    // The change was put back; a journal that cannot say so only makes cleanup look again.
  }
}

}  // namespace ks::journal

#include "util/journal.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "util/error.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"

namespace ks::journal {
namespace {

using nlohmann::json;

Journal* g_active = nullptr;

std::string hmac_hex(std::string_view key, std::string_view text) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(text.data()),
            text.size(), mac, &length))
    throw SystemError("seal a journal line", "HMAC-SHA256 failed");
  return hex(std::string_view(reinterpret_cast<const char*>(mac), length));
}

// The journal's place, which every seal covers, so that a line sealed in one run's journal
// does not verify in another's: the real path of FILE's directory (a link to it or a relative
// name reads the same journal) and its name.
std::string place_of(const fs::path& file) {
  auto dir = fs::absolute(file).parent_path();
  std::error_code ec;
  auto real = fs::canonical(dir, ec);
  return ((ec ? dir : real) / file.filename()).string();
}

// LINE with its seal ("mac") added: HMAC of the journal's PLACE and the line.
std::string sealed(json line, std::string_view key, const std::string& place) {
  line["mac"] = hmac_hex(key, place + '\n' + line.dump());
  return line.dump();
}

// Whether J (a parsed line) carries the seal of KEY for the journal at PLACE; the seal is
// taken out of J.
bool unseal(json& j, std::string_view key, const std::string& place) {
  auto mac = j.find("mac");
  if (mac == j.end() || !mac->is_string()) return false;
  auto claimed = mac->get<std::string>();
  j.erase(mac);
  auto expected = hmac_hex(key, place + '\n' + j.dump());
  return claimed.size() == expected.size() && CRYPTO_memcmp(claimed.data(), expected.data(), expected.size()) == 0;
}

// The text of FILE, or nullopt when it does not exist. Never through a symlink, never a
// FIFO or device, at most kMaxBytes.
std::optional<std::string> read_bounded(const fs::path& file) {
  return read_regular_file(file, kMaxBytes, Links::refuse);
}

// Throws unless PATH (lstat) is of KIND, owned by this user and not writable by group or others.
void require_private(const fs::path& path, mode_t kind, const char* what) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) throw SystemError("check " + path.string(), errno);
  if ((st.st_mode & S_IFMT) != kind)
    throw SystemError("check " + path.string(), std::string("not a ") + what + " (a symbolic link or another kind of file)");
  if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    throw SystemError("check " + path.string(),
                      "owned by uid " + std::to_string(st.st_uid) + " or writable by others: the journal key must be "
                      "this user's alone");
}

}  // namespace

json identity_of(const fs::path& path) {
  struct statx st{};
  if (::statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_INO | STATX_BTIME, &st) != 0)
    return nullptr;
  const mode_t type = st.stx_mode & S_IFMT;
  json id{{"dev", std::to_string(st.stx_dev_major) + ":" + std::to_string(st.stx_dev_minor)},
          {"ino", static_cast<uint64_t>(st.stx_ino)},
          {"type", type == S_IFREG ? "file" : type == S_IFDIR ? "directory" : type == S_IFLNK ? "link" : "other"}};
  // A freed inode number is soon given again (ext4 does at once): its birth time tells the
  // file made then from one made later under the same number, where the filesystem keeps it.
  if (st.stx_mask & STATX_BTIME)
    id["born"] = std::to_string(st.stx_btime.tv_sec) + "." + std::to_string(st.stx_btime.tv_nsec);
  return id;
}

std::string load_key(const fs::path& dir) {
  require_private(dir, S_IFDIR, "directory");
  const auto file = dir / "journal.key";
  constexpr size_t kKeyBytes = 32;
  for (int attempt = 0; attempt < 2; ++attempt) {
    int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      struct Close {
        int fd;
        ~Close() { ::close(fd); }
      } close_fd{fd};
      require_private(file, S_IFREG, "regular file");
      std::string key(kKeyBytes, '\0');
      if (::read(fd, key.data(), key.size()) != static_cast<ssize_t>(key.size()))
        throw SystemError("read " + file.string(), "not a journal key of " + std::to_string(kKeyBytes) + " bytes");
      return key;
    }
    if (errno != ENOENT) throw SystemError("open " + file.string(), errno);
    // Made beside it and linked into place: two runs making it at once agree on one key.
    std::string key(kKeyBytes, '\0');
    if (::getrandom(key.data(), key.size(), 0) != static_cast<ssize_t>(key.size()))
      throw SystemError("getrandom for the journal key", errno);
    auto tmp = dir / ("journal.key." + std::to_string(::getpid()));
    int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0) throw SystemError("create " + tmp.string(), errno);
    bool written = ::write(out, key.data(), key.size()) == static_cast<ssize_t>(key.size()) && ::fsync(out) == 0;
    ::close(out);
    int linked = written ? ::link(tmp.c_str(), file.c_str()) : -1;
    int err = errno;
    ::unlink(tmp.c_str());
    if (!written) throw SystemError("write " + tmp.string(), err);
    if (linked == 0) return key;
    if (err != EEXIST) throw SystemError("link " + file.string(), err);
  }
  throw SystemError("open " + file.string(), "it appeared and vanished again");
}

std::vector<Entry> Contents::pending() const {
  std::vector<Entry> out;
  for (auto it = entries.rbegin(); it != entries.rend(); ++it)
    if (!undone.count(it->seq)) out.push_back(*it);
  return out;
}

constexpr int kMaxLineDepth = 8;

Contents read(const fs::path& file, std::string_view key) {
  auto text = read_bounded(file);
  return text ? parse(*text, key, place_of(file)) : Contents{};
}

Contents parse(std::string_view text, std::string_view key, const std::string& place) {
  Contents c;
  for (auto& line : split(text, '\n')) {
    if (trim(line).empty()) continue;
    // Nothing a run writes nests deeper than a few levels. A deeper value is dropped while it
    // is parsed (nlohmann's parser keeps its own stack), so no recursive dump or destructor
    // ever meets 100,000 levels, and the line counts as not whole.
    int deepest = 0;
    json::parser_callback_t shallow = [&deepest](int depth, json::parse_event_t, json&) {
      deepest = std::max(deepest, depth);
      return depth <= kMaxLineDepth;
    };
    json j = json::parse(line, shallow, false);
    if (j.is_discarded() || !j.is_object() || deepest > kMaxLineDepth) {
      ++c.torn_lines;
      continue;
    }
    if (!unseal(j, key, place)) {
      ++c.unsealed_lines;
      continue;
    }
    try {
      if (j.contains("seq")) {
        Entry e;
        e.seq = j.at("seq").get<uint64_t>();
        // A sealed line copied again (from this journal or another run's) is no new change.
        if (std::any_of(c.entries.begin(), c.entries.end(), [&](auto& made) { return made.seq == e.seq; })) {
          ++c.repeated_lines;
          continue;
        }
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

Journal::Journal(fs::path file, std::string key)
    : file_(std::move(file)), key_(std::move(key)), place_(place_of(file_)) {
  auto existing = read(file_, key_);
  for (auto& e : existing.entries) next_ = std::max(next_, e.seq + 1);
  for (auto seq : existing.undone) next_ = std::max(next_, seq + 1);
  // Root's alone: anyone who could open it could hold its lock, and cleanup waits for that.
  fd_ = open_private_file(file_, O_WRONLY | O_APPEND);
  // A line torn by a killed writer must not swallow the next one.
  auto text = read_bounded(file_).value_or("");
  if (!text.empty() && text.back() != '\n') write_all(fd_, "\n", file_);
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

void Journal::append(const json& line) {
  write_all(fd_, sealed(line, key_, place_) + "\n", file_);
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

Active::Active(const fs::path& file, std::string key) : journal_(file, std::move(key)) { g_active = &journal_; }
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

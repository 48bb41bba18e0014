#include "util/files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <chrono>
#include <ctime>
#include <fstream>
#include <random>
#include <sstream>
#include <utility>

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

namespace {

struct Close {
  int fd;
  ~Close() {
    if (fd >= 0) ::close(fd);
  }
};

// The regular file WHERE (an O_PATH descriptor of PATH, or -1 with errno) opened for reading,
// its stat in ST; -1 when it does not exist.
int reopen_regular(const Close& where, const fs::path& path, struct stat& st) {
  if (where.fd < 0) {
    if (errno == ENOENT) return -1;
    if (errno == ELOOP || errno == EXDEV)
      throw SystemError("open " + path.string(), "a symbolic link is on the way, or it leads outside");
    throw SystemError("open " + path.string(), errno);
  }
  if (::fstat(where.fd, &st) != 0) throw SystemError("stat " + path.string(), errno);
  if (S_ISLNK(st.st_mode)) throw SystemError("open " + path.string(), "it is a symbolic link");
  if (!S_ISREG(st.st_mode))
    throw SystemError("read " + path.string(), "not a regular file (a device, FIFO, socket or directory)");
  // The very file just checked, opened for reading through its descriptor.
  const int fd = ::open(("/proc/self/fd/" + std::to_string(where.fd)).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw SystemError("open " + path.string(), errno);
  return fd;
}

int open_path(const fs::path& path, Links links) {
  return ::open(path.c_str(), O_PATH | O_CLOEXEC | (links == Links::refuse ? O_NOFOLLOW : 0));
}

// The regular file WHERE (as reopen_regular takes it), read whole.
std::optional<std::string> read_opened(const Close& where, const fs::path& path, size_t max_bytes) {
  struct stat st{};
  Close reading{reopen_regular(where, path, st)};
  const int fd = reading.fd;
  if (fd < 0) return std::nullopt;
  auto too_big = [&] {
    return SystemError("read " + path.string(), "it holds more than " + std::to_string(max_bytes) +
                                                    " bytes, more than such a file ever holds");
  };
  if (static_cast<uint64_t>(st.st_size) > max_bytes) throw too_big();
  // Read one byte past the limit: a file that grows while it is read is caught as well.
  std::string text(static_cast<size_t>(st.st_size) + 1, '\0');
  size_t got = 0;
  for (;;) {
    if (got == text.size()) {
      if (text.size() > max_bytes) throw too_big();
      text.resize(std::min(text.size() * 2, max_bytes + 1));
    }
    ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw SystemError("read " + path.string(), errno);
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  text.resize(got);
  return text;
}

}  // namespace

std::optional<std::string> read_regular_file(const fs::path& path, size_t max_bytes, Links links) {
  // O_PATH first: its kind is known before anything is opened for reading, since opening
  // can itself act (a FIFO waits for a writer, /dev/watchdog arms, a tape rewinds). With
  // O_NOFOLLOW, O_PATH opens a link itself, which fstat then names.
  return read_opened({open_path(path, links)}, path, max_bytes);
}

int open_regular_file(const fs::path& path, Links links) {
  struct stat st{};
  const int fd = reopen_regular({open_path(path, links)}, path, st);
  if (fd < 0) throw SystemError("open " + path.string(), ENOENT);
  return fd;
}

std::optional<std::string> read_regular_file_beneath(const fs::path& dir, const fs::path& rel, size_t max_bytes) {
  return read_opened({open_path_beneath(dir, rel)}, dir / rel, max_bytes);
}

std::string read_head_and_tail(const fs::path& path, size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {};
  struct stat st{};
  std::string text;
  auto read_at = [&](off_t from, size_t count) {
    auto start = text.size();
    text.resize(start + count);
    size_t got = 0;
    while (got < count) {
      ssize_t n = ::pread(fd, text.data() + start + got, count - got, from + static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    text.resize(start + got);
  };
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    auto size = static_cast<size_t>(st.st_size);
    if (size <= max_bytes) {
      read_at(0, size);
    } else {
      read_at(0, max_bytes / 2);
      text += "\n[ksandwich: " + std::to_string(size - max_bytes / 2 * 2) + " bytes left out here]\n";
      read_at(static_cast<off_t>(size - max_bytes / 2), max_bytes / 2);
    }
  }
  ::close(fd);
  return text;
}

std::optional<InvokingUser> invoking_user() {
  const char* uid_text = std::getenv("SUDO_UID");
  const char* gid_text = std::getenv("SUDO_GID");
  if (::geteuid() != 0 || (!uid_text && !gid_text)) return std::nullopt;
  // As sudo writes them: digits, no sign, no leading zero (forty-ninth attack: "065534" was
  // one user to AsInvokingUser and another to trusted_owner).
  auto id = [](const char* text) -> std::optional<unsigned> {
    if (!text || !std::isdigit(static_cast<unsigned char>(*text)) || (*text == '0' && text[1])) return std::nullopt;
    char* end = nullptr;
    errno = 0;
    const unsigned long n = std::strtoul(text, &end, 10);
    if (*end || errno || n >= 0xffffffffUL) return std::nullopt;
    return static_cast<unsigned>(n);
  };
  const auto uid = id(uid_text), gid = id(gid_text);
  if (!uid || !gid)
    throw SystemError("take the ids of the user who ran sudo",
                      "SUDO_UID and SUDO_GID must both be set, each a number (unset both to act as root)");
  if (*uid == 0) return std::nullopt;
  return InvokingUser{*uid, *gid};
}

AsInvokingUser::AsInvokingUser() : AsInvokingUser(invoking_user(), "") {}

AsInvokingUser::AsInvokingUser(std::optional<InvokingUser> user, std::string who) {
  if (!user) return;
  const int count = ::getgroups(0, nullptr);
  std::vector<gid_t> groups(static_cast<size_t>(std::max(count, 0)));
  if (count < 0 || ::getgroups(count, groups.data()) != count) throw SystemError("getgroups", errno);
  groups_ = std::move(groups);
  // System calls of their own: the kernel's credentials are per thread, and glibc's
  // setgroups would change every thread's. setfsuid answers the id before; -1 changes nothing.
  const gid_t group = user->gid;
  if (::syscall(SYS_setgroups, 1, &group) != 0) throw SystemError("setgroups", errno);
  fsgid_ = static_cast<gid_t>(::syscall(SYS_setfsgid, group));
  fsuid_ = static_cast<uid_t>(::syscall(SYS_setfsuid, user->uid));
  who_ = who.empty() ? "uid " + std::to_string(user->uid) + ", who ran sudo" : std::move(who);
  if (::syscall(SYS_setfsuid, -1) != static_cast<long>(user->uid) || ::syscall(SYS_setfsgid, -1) != static_cast<long>(group)) {
    restore();
    throw SystemError("take the ids of the user who ran sudo", "setfsuid or setfsgid was refused");
  }
}

AsInvokingUser::~AsInvokingUser() { restore(); }

bool AsInvokingUser::may(const fs::path& path, int mode) const {
#ifdef SYS_faccessat2
  return ::syscall(SYS_faccessat2, AT_FDCWD, path.c_str(), mode, AT_EACCESS) == 0;
#else
  return false;
#endif
}

bool AsInvokingUser::may(int fd, int mode) const {
#ifdef SYS_faccessat2
  return ::syscall(SYS_faccessat2, fd, "", mode, AT_EACCESS | AT_EMPTY_PATH) == 0;
#else
  return false;
#endif
}

void AsInvokingUser::restore() {
  if (who_.empty()) return;
  ::syscall(SYS_setfsuid, fsuid_);  // root's file capabilities come back with it
  ::syscall(SYS_setfsgid, fsgid_);
  ::syscall(SYS_setgroups, groups_.size(), groups_.data());
  who_.clear();
}

namespace {
constexpr const char* kMadeForAttribute = "trusted.ksandwich.made-for-uid";

bool empty_directory(int fd) {
  const int copy = ::dup(fd);
  DIR* d = copy < 0 ? nullptr : ::fdopendir(copy);
  if (!d) {
    if (copy >= 0) ::close(copy);
    return false;
  }
  bool empty = true;
  while (const dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) empty = false;
  ::closedir(d);
  return empty;
}

}  // namespace

void create_output_directory(const fs::path& dir) {
  auto clean = fs::absolute(dir).lexically_normal();
  if (!clean.has_filename()) clean = clean.parent_path();  // "out/"
  std::vector<fs::path> missing;  // deepest first
  std::error_code ec;
  for (auto p = clean; !fs::exists(p, ec) && p.has_relative_path(); p = p.parent_path()) missing.push_back(p);
  if (missing.empty()) {
    if (!fs::is_directory(clean, ec)) throw SystemError("make the directory " + clean.string(), "it exists and is not a directory");
    return;
  }
  // Each level made beneath the descriptor of the one above, never by its whole path again
  // (fiftieth attack: a link of the user's on the way, flipped between the mkdir and an open
  // by the whole path, had an existing directory of root's marked).
  const auto top = missing.back().parent_path();
  Close parent{::open(top.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)};
  if (parent.fd < 0) throw SystemError("open " + top.string(), errno);
  const auto user = invoking_user();
  if (user) {
    // Where it is made now, which a link flipped since the output checks may have moved: a
    // place they may write to, or one made for them.
    AsInvokingUser as;
    struct stat here{}, named{};
    if (!as.may(parent.fd, W_OK | X_OK) &&
        !(made_for_invoking_user(top) && ::fstat(parent.fd, &here) == 0 && ::stat(top.c_str(), &named) == 0 &&
          here.st_dev == named.st_dev && here.st_ino == named.st_ino))
      throw UserError(top.string() + ": " + as.who() + ", cannot write there, and root writes for them only where they could",
                      "name a place of yours for the output");
  }
  const auto uid = user ? std::to_string(user->uid) : std::string();
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    const auto name = it->filename();
    const bool made = ::mkdirat(parent.fd, name.c_str(), 0777) == 0;
    if (!made && errno != EEXIST) throw SystemError("make the directory " + it->string(), errno);
    // Under sudo, one that appeared since it was found missing is not gone into (fifty-first
    // attack: a directory of root's renamed into its place in the user's became the parent of
    // the next level, made and written to as theirs).
    if (!made && user)
      throw SystemError("make the directory " + it->string(), "another appeared in its place while it was made");
    Close here{::openat(parent.fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    if (here.fd < 0) throw SystemError("open " + it->string(), errno);
    if (made && user) {
      // Marked only as the empty directory of root's just made there; anything else found by
      // its name was put in its place meanwhile, and nothing is written into it. Where the file
      // system keeps no trusted attributes it stays unmarked, and continuing in it under sudo
      // is refused.
      struct stat st{};
      if (::fstat(here.fd, &st) != 0 || st.st_uid != 0 || !empty_directory(here.fd))
        throw SystemError("make the directory " + it->string(), "another was put in its place while it was made");
      (void)::fsetxattr(here.fd, kMadeForAttribute, uid.data(), uid.size(), 0);
    }
    std::swap(parent.fd, here.fd);
  }
}

fs::file_status status_as_invoking_user(const fs::path& path, Links links) {
  AsInvokingUser as;
  std::error_code ec;  // an error is a status of none: it does not exist for them
  return links == Links::follow ? fs::status(path, ec) : fs::symlink_status(path, ec);
}

void copy_tree_as_invoking_user(const fs::path& from, const fs::path& to, size_t max_bytes,
                                const std::vector<fs::path>& leave_out) {
  constexpr size_t kMaxEntries = 100000;  // far beyond any run directory
  const size_t max_total = 16 * max_bytes;
  std::vector<std::pair<fs::path, bool>> entries;  // beneath FROM; a directory?
  std::string by;
  auto unreadable = [&](const fs::path& what, const std::string& why) {
    return UserError(what.string() + " cannot be copied" + by + ": " + why,
                     "copy from a directory " + (by.empty() ? std::string("of regular files") : "you can read yourself"));
  };
  {
    AsInvokingUser as;
    by = as.who().empty() ? "" : " by " + as.who();
    std::error_code ec;
    for (fs::recursive_directory_iterator it(from, ec), end; !ec && it != end; it.increment(ec)) {
      const auto type = it->symlink_status(ec).type();
      const auto rel = it->path().lexically_relative(from);
      if (type != fs::file_type::directory && type != fs::file_type::regular) continue;
      if (std::find(leave_out.begin(), leave_out.end(), rel) != leave_out.end()) continue;
      if (entries.size() == kMaxEntries) throw unreadable(from, "more than " + std::to_string(kMaxEntries) + " entries");
      entries.emplace_back(rel, type == fs::file_type::directory);
    }
    if (ec) throw unreadable(from, ec.message());
  }
  fs::create_directory(to);
  size_t total = 0;
  for (const auto& [rel, directory] : entries) {
    if (directory) {
      fs::create_directory(to / rel);
      continue;
    }
    std::optional<std::string> text;
    try {
      AsInvokingUser as;
      text = read_regular_file_beneath(from, rel, max_bytes);
    } catch (const SystemError& err) {
      throw unreadable(from / rel, err.what());
    }
    if (!text) continue;
    if ((total += text->size()) > max_total)
      throw unreadable(from, "more than " + std::to_string(max_total >> 20) + " MiB in all");
    write_file_atomic(to / rel, *text);
  }
}

bool made_for_invoking_user(const fs::path& dir) {
  const auto user = invoking_user();
  if (!user) return false;
  const auto uid = std::to_string(user->uid);
  for (auto up = dir;; up = up.parent_path()) {
    struct stat st{};
    if (::lstat(up.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0) return false;
    char value[16];
    const ssize_t n = ::lgetxattr(up.c_str(), kMadeForAttribute, value, sizeof value);
    if (n >= 0 && std::string_view(value, static_cast<size_t>(n)) == uid) return true;
    if (!up.has_relative_path()) return false;
  }
}

fs::path fresh_name(const fs::path& dir, const std::string& prefix) {
  std::random_device random;
  char suffix[13];
  std::snprintf(suffix, sizeof suffix, "%06x%06x", random() & 0xffffff, random() & 0xffffff);
  return dir / (prefix + suffix);
}

std::string read_input_file(const fs::path& path, size_t max_bytes, const std::string& what, Links links,
                            Reader reader) {
  std::string by;
  try {
    const bool anyone = reader == Reader::anyone;
    AsInvokingUser as(anyone ? std::optional(InvokingUser{65534, 65534}) : invoking_user(),  // the kernel's overflow ids
                      anyone ? "anyone (uid 65534), as root reads a file others could lead it to" : "");
    by = as.who().empty() ? "" : " by " + as.who();
    if (auto text = read_regular_file(path, max_bytes, links)) return *text;
  } catch (const SystemError& err) {
    throw UserError(what + " " + path.string() + " cannot be read" + by + ": " + err.what(),
                    "name the " + what + " itself: a regular file of at most " + std::to_string(max_bytes >> 20) +
                        " MiB" + (by.empty() ? ""
                                  : reader == Reader::anyone ? ", one anyone may read, or a copy in a directory of yours"
                                                             : ", one you can read yourself"));
  }
  throw UserError(what + " " + path.string() + " does not exist", "check the path");
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

int open_path_beneath(const fs::path& dir, const fs::path& rel) {
  const int top = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (top < 0) return -1;
  struct open_how how {};
  how.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const int fd = static_cast<int>(::syscall(SYS_openat2, top, rel.c_str(), &how, sizeof how));
  const int saved = errno;
  ::close(top);
  errno = saved;
  return fd;
}

void write_file(const fs::path& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw SystemError("open " + path.string() + " for writing", errno ? errno : EACCES);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  if (!out) throw SystemError("write " + path.string(), errno ? errno : EIO);
}

void write_file_append(const fs::path& path, std::string_view content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) throw SystemError("open " + path.string() + " for appending", errno);
  Close closer{fd};
  struct stat st{};
  if (::fstat(fd, &st) != 0) throw SystemError("stat " + path.string(), errno);
  if (!S_ISREG(st.st_mode)) throw SystemError("append to " + path.string(), "not a regular file");
  write_all(fd, content, path);
}

void write_all(int fd, std::string_view content, const fs::path& file) {
  while (!content.empty()) {
    ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw SystemError("write " + file.string(), n < 0 ? errno : EIO);
    content.remove_prefix(static_cast<size_t>(n));
  }
}

int open_private_file(const fs::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (fd < 0) throw SystemError("open " + path.string(), errno);
  struct stat st{};
  std::string why;
  if (::fstat(fd, &st) != 0) why = std::strerror(errno);
  else if (!S_ISREG(st.st_mode)) why = "not a regular file";
  else if ((st.st_mode & 077) && ::fchmod(fd, st.st_mode & 07700) != 0) why = std::strerror(errno);
  if (!why.empty()) {
    ::close(fd);
    throw SystemError("open " + path.string(), why);
  }
  return fd;
}

void write_file_atomic(const fs::path& path, std::string_view content) {
  // Only a regular file (or a link, which the rename replaces, never follows) is replaced:
  // renaming over /dev/null or a FIFO would swap a device node for a file.
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
    throw SystemError("write " + path.string(), "it exists and is not a regular file (a device, FIFO or directory)");
  // A new file of a name no one can have planted (O_EXCL: never through a link), beside it.
  std::string tmp = path.string() + ".tmp-XXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw SystemError("create a temporary file beside " + path.string(), errno);
  auto fail = [&](const std::string& what, int err) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw SystemError(what + " " + tmp, err);
  };
  mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd, 0666 & ~mask) != 0) fail("chmod", errno);
  try {
    write_all(fd, content, tmp);
  } catch (const SystemError&) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw SystemError("close " + tmp, err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw SystemError("rename " + tmp + " to " + path.string(), err);
  }
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
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

std::string shell_quote(std::string_view word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

namespace {

// What a reader does not see as written, as ranges of code points, each made one space: the
// C1 controls (U+009B is ESC [ to a terminal), the spaces other than U+0020 (b4 takes them for
// spaces, a reader may not), the invisible format characters (soft hyphen, zero-width spaces and
// joiners, direction marks, word joiner, BOM, Hangul fillers, Unicode tags: "\u200bVerdict:"
// shows as a line of the tool's own), the line and paragraph separators (a new line in some
// editors and mail readers) and the bidirectional embeddings, overrides and isolates.
constexpr std::pair<char32_t, char32_t> kUnseen[] = {
    {0x80, 0xa0},     {0xad, 0xad},     {0x61c, 0x61c},   {0x115f, 0x1160}, {0x1680, 0x1680},
    {0x180e, 0x180e}, {0x2000, 0x200f}, {0x2028, 0x202f}, {0x205f, 0x206f}, {0x3000, 0x3000},
    {0x3164, 0x3164}, {0xfeff, 0xfeff}, {0xffa0, 0xffa0}, {0xfff9, 0xfffb}, {0x1d173, 0x1d17a},
    {0xe0000, 0xe007f},
};

// The code point of the well-formed UTF-8 sequence at the start of S and its length, or
// {0, 0} for anything else (an ASCII byte, a stray or overlong byte).
std::pair<char32_t, size_t> utf8_at(std::string_view s) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const size_t n = b(0) >= 0xf5 ? 0 : b(0) >= 0xf0 ? 4 : b(0) >= 0xe0 ? 3 : b(0) >= 0xc2 ? 2 : 0;
  if (n == 0 || n > s.size()) return {0, 0};
  char32_t c = b(0) & (0xff >> (n + 1));
  for (size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xc0) != 0x80) return {0, 0};
    c = c << 6 | (b(k) & 0x3f);
  }
  const char32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
  if (c < least[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return {0, 0};
  return {c, n};
}

// C0 controls and DEL, and the code points of kUnseen, each become one space (newlines stay
// when KEEP_NEWLINES); a byte that starts no well-formed UTF-8 becomes '?' (a text cut inside
// a character, or a stray 0x9b, which an 8-bit terminal reads as ESC [): what comes out is UTF-8.
std::string without_controls(std::string_view s, bool keep_newlines) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto byte = static_cast<unsigned char>(s[i]);
    if ((byte < 0x20 && !(keep_newlines && byte == '\n')) || byte == 0x7f) {
      out += ' ', ++i;
      continue;
    }
    auto [c, n] = byte < 0x80 ? std::pair<char32_t, size_t>{0, 0} : utf8_at(s.substr(i));
    const bool unseen = n > 0 && std::any_of(std::begin(kUnseen), std::end(kUnseen),
                                             [c](auto range) { return c >= range.first && c <= range.second; });
    if (unseen) out += ' ';
    else if (byte >= 0x80 && n == 0) out += '?';
    else out.append(s.substr(i, n ? n : 1));
    i += n ? n : 1;
  }
  return out;
}
}  // namespace

std::string one_line_cut(std::string_view s, size_t max) {
  if (s.size() <= max) return one_line(s);
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return one_line(s.substr(0, cut)) + "...";
}

std::string one_line(std::string_view s) { return without_controls(s, false); }
std::string printable_lines(std::string_view s) { return without_controls(s, true); }

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

ScopedDir ScopedDir::temporary(const std::string& prefix) {
  // Root's in /tmp, whatever $TMPDIR says: a directory of another user's there could swap the
  // made directory for a link between its checks and their use (eighteenth attack).
  const fs::path base = ::geteuid() == 0 ? fs::path("/tmp") : fs::temp_directory_path();
  std::string dir = (base / (prefix + "XXXXXX")).string();
  if (!::mkdtemp(dir.data())) throw SystemError("make a temporary directory " + dir, errno);
  return ScopedDir(dir, Adopt{});
}

ScopedDir::~ScopedDir() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace ks

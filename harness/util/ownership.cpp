#include "util/ownership.hpp"

#include "util/error.hpp"
#include "util/files.hpp"

#include <grp.h>
#include <pwd.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace ks {

namespace {

// Whether GID is UID's own private group (what umask 002 systems give each user): named as
// UID is and UID's primary group, and no one else in it: no other account's primary group, and
// no entry of that gid (the database may hold several) lists a member. Asked once per pair.
bool private_group(uid_t uid, gid_t gid) {
  static std::mutex mutex;
  static std::map<std::pair<uid_t, gid_t>, bool> known;
  std::lock_guard lock(mutex);
  if (auto it = known.find({uid, gid}); it != known.end()) return it->second;
  bool only = false;
  if (const struct passwd* owner = ::getpwuid(uid); owner && owner->pw_gid == gid) {
    const std::string name = owner->pw_name;  // getgrgid may reuse getpwuid's buffer
    const struct group* group = ::getgrgid(gid);
    only = group && name == group->gr_name;
  }
  ::setpwent();
  for (const struct passwd* p = ::getpwent(); only && p; p = ::getpwent()) only = p->pw_gid != gid || p->pw_uid == uid;
  ::endpwent();
  ::setgrent();
  for (const struct group* g = ::getgrent(); only && g; g = ::getgrent())
    only = g->gr_gid != gid || g->gr_mem == nullptr || g->gr_mem[0] == nullptr;
  ::endgrent();
  return known[{uid, gid}] = only;
}

bool trusted_owner(uid_t uid) {
  if (uid == 0 || uid == ::geteuid()) return true;
  const auto user = invoking_user();
  return user && user->uid == uid;
}

// The invoking user's private group under sudo (SUDO_UID's, when SUDO_GID names it).
bool sudo_private_group(gid_t gid) {
  const auto user = invoking_user();
  return user && user->gid == gid && private_group(user->uid, gid);
}

// Whether the POSIX ACL XATTR on PATH lets a named user or group write (under its mask), or,
// for a directory's default ACL (what is made in it inherits), also others, and the group
// where the directory passes its own on (setgid). Read as the kernel stores it
// (linux/posix_acl_xattr.h); one that cannot be read counts.
bool acl_lets_write(const std::filesystem::path& path, const char* xattr, bool inherited, bool setgid) {
  std::array<unsigned char, 4096> buf{};  // 500 entries; an ACL holds at most 32 on ext4
  const ssize_t n = ::getxattr(path.c_str(), xattr, buf.data(), buf.size());
  if (n < 0) return errno != ENODATA && errno != ENOTSUP;
  const size_t header = sizeof(posix_acl_xattr_header), entry = sizeof(posix_acl_xattr_entry);
  if (size_t(n) < header || (size_t(n) - header) % entry != 0) return true;
  auto le16 = [&](size_t at) { return unsigned(buf[at]) | unsigned(buf[at + 1]) << 8; };
  bool named = false, group = false, other = false, mask = true;
  for (size_t at = header; at < size_t(n); at += entry) {
    const bool write = le16(at + 2) & ACL_WRITE;
    switch (le16(at)) {
      case ACL_USER:
      case ACL_GROUP: named = named || write; break;
      case ACL_GROUP_OBJ: group = write; break;
      case ACL_MASK: mask = write; break;
      case ACL_OTHER: other = write; break;
      default: break;
    }
  }
  return (named && mask) || (inherited && (other || (setgid && group && mask)));
}

}  // namespace

bool others_may_write(const struct stat& st) {
  if (st.st_mode & S_IWOTH) return true;
  if (!(st.st_mode & S_IWGRP) || st.st_gid == 0) return false;
  return !private_group(st.st_uid, st.st_gid);
}

bool others_may_write(const std::filesystem::path& path, const struct stat& st) {
  return others_may_write(st) || acl_lets_write(path, "system.posix_acl_access", false, false) ||
         (S_ISDIR(st.st_mode) && acl_lets_write(path, "system.posix_acl_default", true, st.st_mode & S_ISGID));
}

bool trusted_dir(const struct stat& st) {
  if (!trusted_owner(st.st_uid)) return false;
  if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) return false;
  return (st.st_mode & S_ISVTX) || !others_may_write(st) || sudo_private_group(st.st_gid);
}

std::string owner_text(const struct stat& st) {
  return "belongs to uid " + std::to_string(st.st_uid) + (others_may_write(st) ? " and others may write to it" : "");
}

std::string owner_text(const std::filesystem::path& path, const struct stat& st) {
  if (others_may_write(st) || !others_may_write(path, st)) return owner_text(st);
  return "belongs to uid " + std::to_string(st.st_uid) + " and others may write to it (an ACL)";
}

namespace {

// The first symbolic link met while following PATH as the kernel does, one name at a time
// (into each link's target, links in it included), whose owner is not trusted: a link is judged
// by its target, and its owner may point it elsewhere later (in a sticky /tmp, another user's
// link to a directory of root's passes every other check). Stops where a name does not exist.
std::optional<std::string> untrusted_link(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::vector<std::string> names;  // still to follow, the next one last
  auto push = [&names](const fs::path& p) {
    std::vector<std::string> in;
    for (auto& part : p.relative_path()) in.push_back(part.string());
    names.insert(names.end(), in.rbegin(), in.rend());
  };
  push(path);
  fs::path at = "/";
  for (int links = 0; !names.empty();) {
    auto name = names.back();
    names.pop_back();
    if (name.empty() || name == ".") continue;
    if (name == "..") {
      at = at.parent_path();
      continue;
    }
    auto next = at / name;
    struct stat st{};
    if (::lstat(next.c_str(), &st) != 0) return std::nullopt;
    if (!S_ISLNK(st.st_mode)) {
      at = next;
      continue;
    }
    if (!trusted_owner(st.st_uid))
      return next.string() + " is a symbolic link that belongs to uid " + std::to_string(st.st_uid) +
             " (its owner could point it elsewhere)";
    if (++links > 40) return path.string() + " has too many symbolic links on the way";
    std::error_code ec;
    auto target = fs::read_symlink(next, ec);
    if (ec) return next.string() + " cannot be read: " + ec.message();
    if (target.is_absolute()) at = "/";
    push(target);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> untrusted_on_the_way(const std::filesystem::path& path, PathRole role) {
  namespace fs = std::filesystem;
  if (::geteuid() != 0) return std::nullopt;
  std::error_code ec;
  const auto written = fs::absolute(path, ec);
  const auto real = ec ? fs::path() : fs::weakly_canonical(written, ec);
  if (ec || real.empty()) return path.string() + " cannot be resolved: " + ec.message();
  if (auto why = untrusted_link(written)) return why;
  // The resolved way first: what is not trusted is named itself, not a link of root's to it
  // (seventieth attack: "rootlink belongs to uid 65534").
  for (const auto* walked : {&real, &written}) {
    std::vector<fs::path> parts;
    for (auto& part : *walked)
      if (!part.empty()) parts.push_back(part);  // not a trailing slash's empty name
    fs::path prefix;
    std::optional<struct stat> parent;
    for (size_t i = 0; i < parts.size(); ++i) {
      prefix /= parts[i];
      const bool last = i + 1 == parts.size();
      struct stat st{};
      if (::stat(prefix.c_str(), &st) != 0) {
        if (errno != ENOENT) return prefix.string() + " cannot be examined: " + std::strerror(errno);
        if ((!last || role != PathRole::kReplacedFile) && parent && others_may_write(*parent))
          return prefix.parent_path().string() + " lets others write in it, where " + prefix.filename().string() +
                 " would be made (they could make it first, or a link by that name)";
        break;
      }
      if (!others_may_write(st) && others_may_write(prefix, st))
        return prefix.string() + " has an ACL that may let others write to it, or to what is made in it";
      parent = st;
      const bool dir = S_ISDIR(st.st_mode);
      if (!last || role == PathRole::kReplacedFile) {
        if (!dir) {
          if (last) break;  // an existing output file: replaced, never written through
          return prefix.string() + " is not a directory";
        }
        if (!trusted_dir(st)) return prefix.string() + " " + owner_text(st);
        continue;
      }
      if (role == PathRole::kDevice) {
        if (!S_ISBLK(st.st_mode)) return prefix.string() + " is not a block device";
        continue;
      }
      const bool directory_role = role == PathRole::kOwnDirectory || role == PathRole::kTrustedDirectory;
      if (dir != directory_role) return prefix.string() + (dir ? " is a directory" : " is not a directory");
      const bool owner_ok = role == PathRole::kOwnDirectory ? st.st_uid == ::geteuid() : trusted_dir(st);
      if (!owner_ok || others_may_write(st)) return prefix.string() + " " + owner_text(st);
    }
  }
  return std::nullopt;
}

std::string trusted_program_path(const std::string& path) {
  if (::geteuid() != 0) return path;
  std::string kept;
  for (const auto* dirs : {&path, &kSystemProgramPath}) {
    for (const auto& dir : split(*dirs, ':'))
      if (!dir.empty() && dir.front() == '/' && !untrusted_on_the_way(dir, PathRole::kTrustedDirectory))
        kept += (kept.empty() ? "" : ":") + dir;
    if (!kept.empty()) break;
  }
  return kept;
}

namespace {

// What a kept variable's value may be.
enum class Kept {
  kAny,               // taken as it is (a proxy's URL; a KSANDWICH_* path, checked where it is used)
  kNoPath,            // a name, not a file: dropped when it holds a '/' (LANG=/x loads /x as a locale) or a control character
  kTrustedDirectory,  // a directory root uses: untrusted_on_the_way(..., kTrustedDirectory), made absolute
  kTrustedFile,       // a file root reads or appends to: untrusted_on_the_way(..., kTrustedFile), made absolute
};
struct KeptVariable {
  std::string_view name;
  Kept kept;
  bool prefix = false;  // every variable whose name begins with NAME
};
// The variables root's ksandwich passes on. Everything else (BASH_ENV, LD_*, MAKEFLAGS, CC,
// ARCH, KBUILD_*, CCACHE_* but its directory, GIT_*, PYTHON*, SBATCH_*, ...) is dropped: a
// program ksandwich starts reads none of it, and no build or measurement depends on it.
constexpr KeptVariable kKeptVariables[] = {
    {"HOME", Kept::kTrustedDirectory},
    {"USER", Kept::kNoPath},
    {"LOGNAME", Kept::kNoPath},
    {"TERM", Kept::kNoPath},
    {"LANG", Kept::kNoPath},
    {"LANGUAGE", Kept::kNoPath},
    {"LC_", Kept::kNoPath, true},
    {"TZ", Kept::kNoPath},
    {"TMPDIR", Kept::kTrustedDirectory},
    {"http_proxy", Kept::kAny},
    {"https_proxy", Kept::kAny},
    {"no_proxy", Kept::kAny},
    {"HTTP_PROXY", Kept::kAny},
    {"HTTPS_PROXY", Kept::kAny},
    {"NO_PROXY", Kept::kAny},
    {"SUDO_UID", Kept::kAny},  // as they are: invoking_user() refuses what is not an id (a run as plain root instead)
    {"SUDO_GID", Kept::kAny},
    {"SUDO_USER", Kept::kNoPath},
    {"KSANDWICH_", Kept::kAny, true},  // each checked where it is read (require_trusted_overrides, the cache)
    {"CCACHE_DIR", Kept::kAny},        // checked as a cache (kbuild), and set for make by kbuild itself
    {"SLURM_CONF", Kept::kTrustedFile},
    {"GITHUB_STEP_SUMMARY", Kept::kTrustedFile},
};

const KeptVariable* kept_variable(std::string_view name) {
  for (const auto& v : kKeptVariables)
    if (v.prefix ? name.starts_with(v.name) : name == v.name) return &v;
  return nullptr;
}

}  // namespace

KeptEnvironment trusted_environment(const std::vector<std::string>& entries) {
  KeptEnvironment out;
  std::string path = kSystemProgramPath;
  for (const auto& entry : entries) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    std::string name = entry.substr(0, eq), value = entry.substr(eq + 1);
    if (name == "PATH") {
      path = value;
      continue;
    }
    const auto* kept = kept_variable(name);
    if (!kept) continue;
    if (kept->kept == Kept::kNoPath && (value.find('/') != std::string::npos || one_line(value) != value))
      continue;  // silently: TZ=:/etc/localtime is the default anyway
    std::optional<std::string> why;
    if (kept->kept == Kept::kTrustedDirectory || kept->kept == Kept::kTrustedFile) {
      // Absolute, as checked: a child that runs elsewhere (git in its tree) must not read it anew.
      std::error_code ec;
      if (auto absolute = std::filesystem::absolute(value, ec); !ec && !value.empty()) value = absolute.string();
      why = untrusted_on_the_way(value, kept->kept == Kept::kTrustedDirectory ? PathRole::kTrustedDirectory
                                                                              : PathRole::kTrustedFile);
    }
    if (why) out.notes.push_back(name + "=" + value + ": " + *why);
    else out.variables.emplace_back(std::move(name), std::move(value));
  }
  out.variables.emplace_back("PATH", trusted_program_path(path));
  return out;
}

Reader reader_of_anyones_file(const std::filesystem::path& path) {
  return ::geteuid() == 0 && !invoking_user() && untrusted_on_the_way(path, PathRole::kTrustedFile) ? Reader::anyone
                                                                                                     : Reader::invoking_user;
}

std::optional<std::string> untrusted_in_tree(const std::filesystem::path& dir, size_t max_entries) {
  namespace fs = std::filesystem;
  if (::geteuid() != 0) return std::nullopt;
  std::error_code ec;
  size_t entries = 0;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (++entries > max_entries)
      return dir.string() + " holds more than " + std::to_string(max_entries) + " entries, too many to check";
    struct stat st{};
    if (::lstat(it->path().c_str(), &st) != 0) return it->path().string() + " cannot be examined: " + std::strerror(errno);
    // A link's own mode means nothing; its owner could point it elsewhere, and what it leads
    // to (outside the tree, never walked) is judged as the way to any file is.
    if (!trusted_owner(st.st_uid) || (!S_ISLNK(st.st_mode) && others_may_write(it->path(), st)))
      return it->path().string() + " " + owner_text(it->path(), st);
    if (S_ISLNK(st.st_mode)) {
      std::error_code kind_ec;
      if (fs::is_directory(it->path(), kind_ec))
        return it->path().string() + " is a symbolic link to a directory, which is not looked into";
      if (auto why = untrusted_on_the_way(it->path(), PathRole::kTrustedFile)) return *why;
    }
  }
  if (ec) return dir.string() + " cannot be read: " + ec.message();
  return std::nullopt;
}

void require_plain_tree(const std::filesystem::path& dir, const std::string& what) {
  namespace fs = std::filesystem;
  auto refuse = [&](const fs::path& entry, const std::string& why) {
    throw UserError(what + " holds " + entry.string() + ", " + why,
                    "a kernel tree holds only directories, files and links; nothing was kept");
  };
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    struct stat st{};
    if (::lstat(it->path().c_str(), &st) != 0) refuse(it->path(), std::string("which cannot be examined: ") + std::strerror(errno));
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
      refuse(it->path(), "a device node, FIFO or socket");
    if (st.st_mode & (S_ISUID | S_ISGID)) refuse(it->path(), "a set-user-ID or set-group-ID file");
  }
  if (ec) throw SystemError("read " + dir.string(), ec.message());
}

namespace {
// F on DIR and on every entry in it, links not followed; throws naming the first that fails.
template <typename F>
void for_tree(const std::filesystem::path& dir, const std::string& doing, F f) {
  namespace fs = std::filesystem;
  auto apply = [&](const fs::path& path) {
    struct stat st{};
    if (::lstat(path.c_str(), &st) != 0 || !f(path, st)) throw SystemError(doing + " " + path.string(), std::strerror(errno));
  };
  apply(dir);
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) apply(it->path());
  if (ec) throw SystemError(doing + " " + dir.string(), ec.message());
}
}  // namespace

void give_tree(const std::filesystem::path& dir, uid_t uid, gid_t gid) {
  for_tree(dir, "change the owner of", [&](const std::filesystem::path& path, const struct stat& st) {
    return (st.st_uid == uid && st.st_gid == gid) || ::lchown(path.c_str(), uid, gid) == 0;
  });
}

void open_tree_for_reading(const std::filesystem::path& dir) {
  for_tree(dir, "make readable", [](const std::filesystem::path& path, const struct stat& st) {
    if (S_ISLNK(st.st_mode)) return true;
    mode_t mode = st.st_mode & 07777;
    mode_t wanted = mode | S_IRUSR | S_IRGRP | S_IROTH;
    if (S_ISDIR(st.st_mode) || (mode & S_IXUSR)) wanted |= S_IXUSR | S_IXGRP | S_IXOTH;
    return wanted == mode || ::chmod(path.c_str(), wanted) == 0;
  });
}

void require_trusted_input(const std::filesystem::path& path, const std::string& what) {
  std::error_code ec;
  const bool directory = std::filesystem::is_directory(path, ec);
  const auto role = directory ? PathRole::kTrustedDirectory : PathRole::kTrustedFile;
  if (auto why = untrusted_on_the_way(path, role))
    throw UserError(what + " " + path.string() + ": " + *why + ", and root builds and runs what it says",
                    "keep it where only you (or root) can change it: copy it into a directory of your own");
  // Under sudo, what the invoking user could read or search themselves (forty-fifth attack: a
  // sudo user's config fragment linked to a root-only file had its first line printed). Asked
  // here for a clear message; read_input_file reads as them, so no swap after this gets by.
  AsInvokingUser as;
  if (!as.who().empty() && !as.may(path, directory ? R_OK | X_OK : R_OK))
    throw UserError(what + " " + path.string() + ": " + as.who() + ", cannot read it, and root reads for them only what they could",
                    "name a file you can read yourself");
}

std::optional<std::string> read_cache_file(const std::filesystem::path& path, size_t max_bytes) {
  if (untrusted_on_the_way(path, PathRole::kTrustedFile)) return std::nullopt;
  try {
    return read_regular_file(path, max_bytes, Links::refuse);
  } catch (const SystemError&) {
    return std::nullopt;
  }
}

}  // namespace ks

#include "util/ownership.hpp"

#include "util/error.hpp"

#include <grp.h>
#include <pwd.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace ks {

bool others_may_write(const struct stat& st) {
  if (st.st_mode & S_IWOTH) return true;
  if (!(st.st_mode & S_IWGRP) || st.st_gid == 0) return false;
  const struct passwd* owner = ::getpwuid(st.st_uid);
  const struct group* group = ::getgrgid(st.st_gid);
  const bool private_group = owner && group && owner->pw_gid == st.st_gid &&
                             std::string_view(group->gr_name) == owner->pw_name &&
                             (group->gr_mem == nullptr || group->gr_mem[0] == nullptr);
  return !private_group;
}

namespace {
bool trusted_owner(uid_t uid) {
  const char* sudo_uid = std::getenv("SUDO_UID");
  return uid == 0 || uid == ::geteuid() || (sudo_uid && std::to_string(uid) == sudo_uid);
}
}  // namespace

bool trusted_dir(const struct stat& st) {
  const char* sudo_gid = std::getenv("SUDO_GID");
  if (!trusted_owner(st.st_uid)) return false;
  if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) return false;
  return (st.st_mode & S_ISVTX) || !others_may_write(st) || (sudo_gid && std::to_string(st.st_gid) == sudo_gid);
}

std::string owner_text(const struct stat& st) {
  return "belongs to uid " + std::to_string(st.st_uid) + (others_may_write(st) ? " and others may write to it" : "");
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

// Whether a POSIX ACL on PATH may let a named user or group write to it: with an access ACL,
// the group bits are the ACL's mask, the most any named entry gets.
bool acl_may_write(const std::filesystem::path& path, const struct stat& st) {
  return (st.st_mode & S_IWGRP) && ::getxattr(path.c_str(), "system.posix_acl_access", nullptr, 0) > 0;
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
  for (const auto* walked : {&written, &real}) {
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
      if (acl_may_write(prefix, st)) return prefix.string() + " has an ACL that may let others write to it";
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
      const bool directory_role = role == PathRole::kOwnDirectory || role == PathRole::kTrustedDirectory;
      if (dir != directory_role) return prefix.string() + (dir ? " is a directory" : " is not a directory");
      const bool owner_ok = role == PathRole::kOwnDirectory ? st.st_uid == ::geteuid() : trusted_dir(st);
      if (!owner_ok || others_may_write(st)) return prefix.string() + " " + owner_text(st);
    }
  }
  return std::nullopt;
}

void require_trusted_input(const std::filesystem::path& path, const std::string& what) {
  std::error_code ec;
  const auto role = std::filesystem::is_directory(path, ec) ? PathRole::kTrustedDirectory : PathRole::kTrustedFile;
  if (auto why = untrusted_on_the_way(path, role))
    throw UserError(what + " " + path.string() + ": " + *why + ", and root builds and runs what it says",
                    "keep it where only you (or root) can change it: copy it into a directory of your own");
}

}  // namespace ks

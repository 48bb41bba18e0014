#include "util/ownership.hpp"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <string_view>

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

bool trusted_dir(const struct stat& st) {
  const char* sudo_uid = std::getenv("SUDO_UID");
  const char* sudo_gid = std::getenv("SUDO_GID");
  const bool trusted_owner = st.st_uid == 0 || st.st_uid == ::geteuid() ||
                             (sudo_uid && std::to_string(st.st_uid) == sudo_uid);
  if (!trusted_owner) return false;
  if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) return false;
  return (st.st_mode & S_ISVTX) || !others_may_write(st) || (sudo_gid && std::to_string(st.st_gid) == sudo_gid);
}

}  // namespace ks

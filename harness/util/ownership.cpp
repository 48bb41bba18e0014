#include "util/ownership.hpp"

#include <grp.h>
#include <pwd.h>

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

}  // namespace ks

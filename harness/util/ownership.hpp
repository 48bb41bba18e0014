#pragma once
// Who may change a file besides its owner. Apart from files.hpp because it asks the user and
// group databases (NSS), which the statically linked agent must not pull in.
#include <sys/stat.h>

namespace ks {

// Whether someone other than the owner of ST may write to it: the world, or a group that is
// neither root's (gid 0) nor the owner's own private group (umask 002 systems give every file
// one of those two, and only the owner, or root, is in it).
bool others_may_write(const struct stat& st);

// Whether the directory ST may lie on the way to what root writes, reads or runs as its own:
// its owner is root, this user or (under sudo) the invoking user; and no one else may write
// in it, unless it is sticky (/tmp: no one renames what another made there) or shared only
// with a group that is root's, the sudo user's or the owner's own private group.
bool trusted_dir(const struct stat& st);

}  // namespace ks

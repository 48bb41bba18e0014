#pragma once
// Who may change a file besides its owner. Apart from files.hpp because it asks the user and
// group databases (NSS), which the statically linked agent must not pull in.
#include <sys/stat.h>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "util/files.hpp"

namespace ks {

// Whether someone other than the owner of ST may write to it: the world, or a group that is
// neither root's (gid 0) nor the owner's own private group (umask 002 systems give every file
// one of those two, and only the owner, or root, is in it).
bool others_may_write(const struct stat& st);
// The same for the file at PATH (ST its stat), ACLs counted: a named user or group that may
// write to it, or, a directory's default ACL, to what is made in it.
bool others_may_write(const std::filesystem::path& path, const struct stat& st);

// Whether the directory ST may lie on the way to what root writes, reads or runs as its own:
// its owner is root, this user or (under sudo) the invoking user; and no one else may write
// in it, unless it is sticky (/tmp: no one renames what another made there) or shared only
// with a group that is root's, or the private group of its owner or of the sudo user.
bool trusted_dir(const struct stat& st);

// What PATH itself must be, where it exists, for root to use it.
enum class PathRole {
  kOwnDirectory,      // an output directory: this user's alone
  kTrustedDirectory,  // a cache: trusted_dir's owners, and no one else may write to it
  kReplacedFile,      // an output file, created exclusively and renamed over what is there
  kTrustedFile,       // a file used in place or taken at its word (a database, an experiment)
  kDevice,            // a block device to format: its own mode is the kernel's (root:disk 0660)
};

// For root, why someone else could change what PATH leads to, as a sentence ("/a/b belongs to
// uid 1000", "/tmp lets others write in it, where x would be made (...)"), or nullopt. Every
// symbolic link met on the way (followed one name at a time, into each target) must be a
// trusted_dir owner's; every directory on the way, as written (made absolute; ".." and links as
// the kernel follows them) and as resolved, must be trusted_dir; no ACL on the way may let
// another user write; PATH itself as ROLE says; and what does not exist yet,
// which the caller makes (for kReplacedFile, but its missing directories), must not be made
// in a directory others may write to: they could make it first, as a link. A path that cannot
// be resolved or examined is a reason too. For anyone else: nullopt (they write only where
// they may).
std::optional<std::string> untrusted_on_the_way(const std::filesystem::path& path, PathRole role);

// For root, why someone else could change what lies in the directory DIR, at any depth (a git
// directory: its config names programs git runs, its objects are the source): the first entry
// that is not a trusted_dir owner's, or that others may write to (ACLs counted), as a sentence;
// nullopt when there is none, and for anyone but root. More than MAX_ENTRIES is a reason too.
std::optional<std::string> untrusted_in_tree(const std::filesystem::path& dir, size_t max_entries);

// A tree whose contents someone else chose (an unpacked kernel source, what a patch's make
// left): throws UserError naming WHAT and the first entry that is neither a directory, a
// regular file nor a symbolic link (a device node root would keep for anyone to open, a FIFO,
// a socket), or that is set-user- or set-group-ID (a program that runs as root for anyone).
// Links are not followed.
void require_plain_tree(const std::filesystem::path& dir, const std::string& what);

// DIR and every entry in it given to UID and GID, links themselves (never followed): what
// root hands to an unprivileged build and takes back. Throws SystemError.
void give_tree(const std::filesystem::path& dir, uid_t uid, gid_t gid);
// DIR and every entry in it made readable by anyone (directories searchable too, files
// executable by anyone where their owner's are), links untouched: a tree of root's that an
// unprivileged build reads, however the umask or an archive made it. Throws SystemError.
void open_tree_for_reading(const std::filesystem::path& dir);

// For root, an input ksandwich builds, boots or runs from (an experiment, a patch, a config,
// a mailbox, a kernel source tarball or tree): throws UserError naming WHAT when someone else
// could change it (untrusted_on_the_way; a directory as a cache is, a file as a file used in
// place), and under sudo when the invoking user could not read it themselves (root must not
// read a root-only file into a message or a kernel's .config for them). Bundles and reports
// are read from anyone: this is not for them.
void require_trusted_input(const std::filesystem::path& path, const std::string& what);

// For root, PATH (a $PATH value) with only the directories untrusted_on_the_way takes as a
// cache (root's, or the sudo user's, the way to them too, no one else writing in them, ACLs
// counted), or the system's own when none is: what ksandwich and every program it starts look
// programs up in (fifty-third to fifty-fifth attacks: ".", another user's directory, one with
// an ACL of theirs, or a link of theirs on the way had root run what they put there). For anyone
// else, PATH as it is.
std::string trusted_program_path(const std::string& path);

// Root's environment as ksandwich keeps it for itself and all it starts (fifty-sixth attack:
// BASH_ENV had the `bash -c` of a source check source another user's file as root,
// TAR_OPTIONS ran their program through tar, and MAKEFILES, CCACHE_PREFIX, KCONFIG_ALLCONFIG,
// BASH_FUNC_* and SBATCH_* are the same): of ENTRIES ("NAME=value"), only the variables in
// kKeptVariables (ownership.cpp), PATH narrowed by trusted_program_path. A locale, a time zone or
// a name that holds a '/' (it names a file) or a control character is dropped; a variable naming
// a directory or file (HOME, TMPDIR, SLURM_CONF, GITHUB_STEP_SUMMARY) is made absolute and kept
// only where untrusted_on_the_way accepts it, and is otherwise dropped with a note saying why.
struct KeptEnvironment {
  std::vector<std::pair<std::string, std::string>> variables;
  std::vector<std::string> notes;  // "HOME=/home/x: /home/x belongs to uid 1000", one a variable dropped
};
KeptEnvironment trusted_environment(const std::vector<std::string>& entries);

// Who reads for root a file it reads from anyone (a bundle; read_input_file): under sudo the
// user who ran it; else, where someone else could change the way to PATH or the file itself
// (untrusted_on_the_way), anyone (fifty-third attack: another user's link in /tmp to a
// root-only file had it quoted in a parse error); else root.
Reader reader_of_anyones_file(const std::filesystem::path& path);

// A record ksandwich keeps in its cache (a source's source.json, a build's identity.json, an
// accelerator's or a calibration's verdict), read back: a regular file of at most MAX_BYTES,
// not a link, and for root none that someone else could have changed on the way
// (untrusted_on_the_way: a cache that once had wider permissions, an entry planted), which
// is nullopt, as an absent one is (thirty-eighth attack).
std::optional<std::string> read_cache_file(const std::filesystem::path& path, size_t max_bytes);

// "belongs to uid N" and, when others may write to it, " and others may write to it" (with
// PATH, an ACL counted: " (an ACL)").
std::string owner_text(const struct stat& st);
std::string owner_text(const std::filesystem::path& path, const struct stat& st);

}  // namespace ks

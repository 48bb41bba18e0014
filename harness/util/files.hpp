#pragma once
// Small file helpers shared by every module that reads or writes files.
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path);                  // throws SystemError
std::optional<std::string> try_read_file(const fs::path& path); // nullopt when unreadable
// The bytes of the regular file PATH, nullopt when it does not exist. Refuses (SystemError
// saying why) a FIFO, device or directory (/dev/zero, a pipe that would block), a file of more
// than MAX_BYTES, and, unless FOLLOW_LINKS, a symbolic link: for files a user or someone else
// hands over, whose size and kind ksandwich did not choose.
enum class Links { follow, refuse };
std::optional<std::string> read_regular_file(const fs::path& path, size_t max_bytes, Links links);
// PATH opened for reading (a descriptor the caller closes) when it is a regular file, its kind
// checked before anything is opened: a FIFO would wait for a writer, a device act or never
// end. Throws SystemError saying why not, ENOENT when it does not exist.
int open_regular_file(const fs::path& path, Links links);
// The same for REL beneath DIR, with no symbolic link anywhere on the way (open_path_beneath):
// for a file a program ksandwich does not trust left in a directory it made.
std::optional<std::string> read_regular_file_beneath(const fs::path& dir, const fs::path& rel, size_t max_bytes);
// What another program wrote without a limit (a guest's console, its results port): the whole
// regular file when it holds at most MAX_BYTES, else its first and last MAX_BYTES / 2 with a
// line between them saying how much was left out. Empty when it does not exist or cannot be
// read as a regular file (no link is followed).
std::string read_head_and_tail(const fs::path& path, size_t max_bytes);
// Under sudo (root, SUDO_UID and SUDO_GID numbers, SUDO_UID not 0): the ids of the user who
// ran it; nullopt otherwise. Throws SystemError when only one is set or either is not a
// number: root's environment edited by hand, which must not make root trust or act as the
// wrong user.
struct InvokingUser {
  uid_t uid;
  gid_t gid;
};
std::optional<InvokingUser> invoking_user();
// Under sudo (invoking_user), while one lives, this thread reaches files with the invoking
// user's file-system ids and group alone, without root's file capabilities: the kernel allows
// each open as it would allow them, at the open itself, so no link swapped in after a check
// leads elsewhere. Otherwise, and for every other thread, nothing changes. Throws SystemError
// when the ids cannot be taken.
class AsInvokingUser {
 public:
  AsInvokingUser();
  // The same for USER, named WHO in messages (nothing changes for nullopt).
  AsInvokingUser(std::optional<InvokingUser> user, std::string who);
  ~AsInvokingUser();
  AsInvokingUser(const AsInvokingUser&) = delete;
  AsInvokingUser& operator=(const AsInvokingUser&) = delete;
  // "uid N, who ran sudo", or "" when not under sudo.
  const std::string& who() const { return who_; }
  // Whether they may reach PATH for MODE (R_OK, W_OK, X_OK): faccessat2, which asks as the
  // file-system ids; where the kernel lacks it glibc's faccessat asks as the real uid, root's,
  // so then the answer is no.
  bool may(const fs::path& path, int mode) const;
  bool may(int fd, int mode) const;  // the file FD (O_PATH will do) itself

 private:
  void restore();
  std::string who_;
  uid_t fsuid_ = 0;
  gid_t fsgid_ = 0;
  std::vector<gid_t> groups_;
};
// PATH's kind (following links unless Links::refuse) as the invoking user sees it under sudo
// (AsInvokingUser): what they cannot reach does not exist, so no message tells them what root
// sees there (fiftieth attack: "is not a file" or "cannot be read" told a file's existence in a
// directory of root's alone). Throws SystemError only as AsInvokingUser does.
fs::file_status status_as_invoking_user(const fs::path& path, Links links = Links::follow);
// Makes the output directory DIR and what is missing above it. Under sudo, each directory made
// here is marked as made for the invoking user (an attribute in the trusted namespace, which
// only root can set), and that mark alone lets them continue in a directory of root's: a run to
// resume, a bisection to continue, a submission to gather (check_output_dir).
void create_output_directory(const fs::path& dir);
// Copies the directory tree FROM into TO, which it makes: directories and regular files only
// (links, FIFOs and devices are left out, and LEAVE_OUT's paths beneath FROM), read beneath FROM
// with no link on the way, each at most MAX_BYTES and 16 times that in all. Under sudo FROM is
// listed and read as the invoking user (AsInvokingUser), TO written as root. Throws UserError
// when something in FROM cannot be read.
void copy_tree_as_invoking_user(const fs::path& from, const fs::path& to, size_t max_bytes,
                                const std::vector<fs::path>& leave_out = {});
// Whether DIR is root's and was made by create_output_directory for the user who ran sudo, or
// lies in such a directory through directories of root's only.
bool made_for_invoking_user(const fs::path& dir);

// A file the user names (an experiment, a patch, a mailbox, a bundle): read_regular_file
// following links, as the invoking user under sudo (AsInvokingUser: root reads for them only
// what they could read), with a UserError saying what is wrong with it (missing, not a regular
// file, larger than MAX_BYTES, not theirs to read) instead of a SystemError. WHAT names it in
// the message ("patch file").
// LINKS refuse: a link in PATH's last place is not followed, and the file is not read.
// READER anyone: as no one in particular (the overflow uid 65534, no group of its own), for a
// file root reads from anyone where others could change the way to it: a link of theirs to a
// root-only file then fails to open instead of being read into a message or a report.
enum class Reader { invoking_user, anyone };
std::string read_input_file(const fs::path& path, size_t max_bytes, const std::string& what,
                            Links links = Links::follow, Reader reader = Reader::invoking_user);
// Where programs are looked up when $PATH says nothing of use: the system's own directories.
inline const std::string kSystemProgramPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// What an experiment, a mail or a patch can sensibly weigh: far beyond any real one.
inline constexpr size_t kMaxInputBytes = size_t(64) << 20;
bool read_file_contains(const fs::path& path, std::string_view needle);
std::string read_first_line(const fs::path& path, std::string fallback = {});
// Writes a new file beside PATH (a name made with O_EXCL: never through a planted link) and
// renames it over PATH, so a reader never sees half a file. Refuses a PATH that is a device,
// FIFO or directory; a failed write leaves PATH as it was and no temporary behind.
void write_file_atomic(const fs::path& path, std::string_view content);
// Opens with FLAGS (O_RDWR, O_WRONLY | O_APPEND) the regular file PATH, made 0600 when it is
// new, that no one but its owner may open: a lock or a journal, which anyone who can open it
// can hold locked. Never through a link; one left with wider permissions (by an earlier
// version) is narrowed. Throws SystemError.
int open_private_file(const fs::path& path, int flags);
// An O_PATH descriptor of REL beneath the directory DIR, no symbolic link anywhere on the way
// (REL's last name included) and never outside DIR (openat2's RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS): for a name a diff or an archive chose. -1 with errno when there is none.
int open_path_beneath(const fs::path& dir, const fs::path& rel);
void write_file(const fs::path& path, std::string_view content); // e.g. /sys knobs
// Appends to the regular file PATH, made 0644 when missing; never through a link in its last
// place, never to a FIFO or a device. Throws SystemError.
void write_file_append(const fs::path& path, std::string_view content);
// Writes all of CONTENT to FD, again after EINTR and short writes; FILE names it in the
// SystemError.
void write_all(int fd, std::string_view content, const fs::path& file);

std::string trim(std::string_view s);
std::string lower(std::string s);  // ASCII letters only
std::vector<std::string> split(std::string_view s, char sep);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
bool starts_with(std::string_view s, std::string_view prefix);
// WORD as one POSIX shell word, in single quotes: safe to paste, whatever it holds. The one
// quoting function for every command line ksandwich writes or prints.
std::string shell_quote(std::string_view word);
// S fit for one mail header line or one terminal line: every control character (CR, LF, ESC,
// ...) and every character a reader does not see as written (other spaces, zero-width and
// direction marks, line separators) becomes a space, so text from a bundle or a mail can
// neither start a header or a line, nor move the cursor, nor hide what it holds.
std::string one_line(std::string_view s);
// one_line(S) of at most MAX bytes, cut at a character's start and ending "..." when cut: a
// value from a file someone else wrote, quoted in a message (sixty-fifth attack: an 8 MB
// release, quoted once a point, made 56 MB of a 34 KB bundle's refusal).
std::string one_line_cut(std::string_view s, size_t max = 200);
// The same, keeping the newlines: S fit for a terminal as lines.
std::string printable_lines(std::string_view s);

std::string now_utc_iso8601();

// DIR / PREFIX and twelve random hex digits: a name no one can make first in a directory others
// may write to (/dev/shm, /tmp), as they could a pid and a count, and one that can be journaled
// before it is created (mkstemp and mkdtemp create it first).
fs::path fresh_name(const fs::path& dir, const std::string& prefix);

// A directory made empty now and removed with everything in it when the scope ends, unless
// released (then it stays, e.g. renamed into a cache): nothing half-made stays behind.
class ScopedDir {
 public:
  explicit ScopedDir(fs::path path);
  // A new private directory (mkdtemp: mode 0700, a name no one could plant) in the temporary
  // directory, its name starting with PREFIX.
  static ScopedDir temporary(const std::string& prefix);
  ~ScopedDir();
  ScopedDir(const ScopedDir&) = delete;
  ScopedDir& operator=(const ScopedDir&) = delete;
  const fs::path& path() const { return path_; }
  void release() { path_.clear(); }

 private:
  struct Adopt {};
  ScopedDir(fs::path path, Adopt) : path_(std::move(path)) {}
  fs::path path_;
};

}  // namespace ks

#include "source/source.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>

#include "proc/runner.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"
#include "util/ownership.hpp"

namespace ks::source {

using namespace std::chrono_literals;
using proc::command;

namespace {

// Why someone else could change what lies in the git directory DIR (its way checked by the
// caller): an entry at any depth (untrusted_in_tree), a file its configuration includes
// (include.path, includeIf: in config, or config.worktree where extensions.worktreeConfig
// reads it), or a filter program it names (git archive runs a smudge filter on the source;
// the other programs a config may name, git_command turns off). Walked once per process for
// each directory, known by device and inode: the way is checked on every call, so the
// directory met is the one walked, and no one else can change what is in it. A git
// directory of loose objects takes minutes to walk over a lab machine's network share, and
// a run asks git many times.
std::optional<std::string> untrusted_in_git_dir(const fs::path& dir) {
  static std::mutex mutex;
  static std::set<std::pair<dev_t, ino_t>> walked;
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return dir.string() + " cannot be examined: " + std::strerror(errno);
  std::lock_guard lock(mutex);
  if (walked.count({st.st_dev, st.st_ino})) return std::nullopt;
  auto why = untrusted_in_tree(dir, kMaxGitEntries);
  for (const char* name : {"config", "config.worktree"}) {
    if (why || !fs::exists(dir / name)) continue;
    auto list = command({"git", "config", "--file", (dir / name).string(), "--name-only", "--list"}, 1min);
    list.unset_env_prefixes = {"GIT_", "XDG_"};
    auto keys = proc::run(list);
    if (!keys.ok()) why = (dir / name).string() + " is not a configuration git reads: " + one_line(keys.err);
    for (auto& key : split(keys.out, '\n')) {
      if (key.starts_with("include"))
        why = (dir / name).string() + " includes other files (include.path, includeIf), which no one checked";
      else if (key.starts_with("filter."))
        why = (dir / name).string() + " names a filter program (" + one_line(key) + "), which git runs on the source";
      if (why) break;
    }
  }
  if (!why) walked.insert({st.st_dev, st.st_ino});
  return why;
}

// Settings a repository's config may not make for a command root runs (twenty-second to
// twenty-fourth attacks: a shared hooks directory's hook after a partial clone's lazy fetch,
// gpg.program for log.showSignature, a submodule's diff.external through diff.submodule=diff,
// a mailmap.file FIFO, read by git log and by git archive's export-subst; core.excludesFile,
// which git archive opens): no attributes or excludes file, hooks, file system monitor,
// signature check, mailmap, submodule recursion or transport of any protocol
// (protocol.<name>.allow beats protocol.allow).
constexpr const char* kOverrides[] = {
    "core.attributesFile=/dev/null", "core.excludesFile=/dev/null", "core.hooksPath=/dev/null",
    "core.fsmonitor=false",          "log.showSignature=false",     "log.mailmap=false",
    "mailmap.file=/dev/null",        "mailmap.blob=",               "diff.submodule=short",
    "submodule.recurse=false",       "protocol.allow=never",        "protocol.file.allow=never",
    "protocol.git.allow=never",      "protocol.ssh.allow=never",    "protocol.http.allow=never",
    "protocol.https.allow=never",    "protocol.ext.allow=never",
};
// A git directory, its common one and the object stores they borrow from.
constexpr size_t kMaxGitDirectories = 8;

// The path in TEXT, a commondir (less its line ends) or an alternates line, as git reads it;
// refused where git and a trim would read different paths (twenty-fourth attack: "dir " was
// checked as "dir", and git opened another user's "dir " beside it) or git would unquote it.
fs::path path_git_reads(std::string_view text, const fs::path& file) {
  if (text.empty() || text.front() == '"' || text.front() == ' ' || text.back() == ' ' ||
      std::any_of(text.begin(), text.end(), [](unsigned char c) { return c < ' ' || c == 0x7f; }))
    throw UserError(file.string() + " names \"" + one_line(text.substr(0, 200)) +
                        "\": a path with spaces, controls or quotes at its ends, which git reads as written",
                    "write the path plainly, one per line");
  return fs::path(text);
}

}  // namespace

fs::path require_trusted_git(const fs::path& given) {
  // Absolute: git runs in the git directory, where a relative one would name another.
  const auto repo = fs::absolute(given);
  require_trusted_input(repo, "git source");
  // The git directory: .git, the one a .git file names (a worktree's, with its common one), or
  // the tree itself (bare). Git's own check (safe.directory) asks only who owns it.
  std::vector<fs::path> git_dirs;
  std::error_code ec;
  const auto dot_git = repo / ".git";
  const auto kind = fs::symlink_status(dot_git, ec).type();
  if (kind == fs::file_type::regular) {
    if (auto why = untrusted_on_the_way(dot_git, PathRole::kTrustedFile))
      throw UserError("git source " + repo.string() + ": " + *why + ", and it names the git directory git reads",
                      "keep the repository where only you (or root) can change it");
    auto text = trim(read_regular_file(dot_git, 4096, Links::refuse).value_or(""));
    if (!text.starts_with("gitdir: "))
      throw UserError("git source " + repo.string() + ": " + dot_git.string() + " is not a gitdir: file", "name a git tree");
    fs::path dir = text.substr(8);
    git_dirs.push_back(dir.is_absolute() ? dir : repo / dir);
  } else {
    git_dirs.push_back(kind == fs::file_type::not_found ? repo : dot_git);
  }
  // A commondir (a worktree's, or planted in any git directory) is where git takes the config,
  // refs and objects from: checked too, wherever it is found.
  if (auto common = read_regular_file(git_dirs[0] / "commondir", 4096, Links::refuse)) {
    std::string_view text = *common;
    while (text.ends_with('\n') || text.ends_with('\r')) text.remove_suffix(1);  // as git does
    auto c = path_git_reads(text, git_dirs[0] / "commondir");
    git_dirs.push_back(c.is_absolute() ? c : git_dirs[0] / c);
  }
  // The object stores they borrow from (clone --reference: objects/info/alternates, and
  // theirs in turn) hold the source as much as their own: checked the same way (twenty-third
  // attack).
  const size_t own = git_dirs.size();
  for (size_t i = 0; i < git_dirs.size(); ++i) {
    const auto dir = git_dirs[i];
    auto why = untrusted_on_the_way(dir, PathRole::kTrustedDirectory);
    if (!why) why = untrusted_in_git_dir(dir);
    const auto objects = i < own ? dir / "objects" : dir;
    if (auto alternates = read_regular_file(objects / "info/alternates", 64 * 1024, Links::refuse); alternates && !why)
      for (auto& line : split(*alternates, '\n')) {
        if (line.empty() || line.starts_with("#")) continue;
        auto store = path_git_reads(line, objects / "info/alternates");
        if (git_dirs.size() >= kMaxGitDirectories) {
          why = (objects / "info/alternates").string() + " chains more than " + std::to_string(kMaxGitDirectories) +
                " object stores";
          break;
        }
        git_dirs.push_back(store.is_absolute() ? store : objects / store);
      }
    if (why)
      throw UserError("git source " + repo.string() + ": " + *why +
                          ", and git runs as root what the git directory's config names",
                      "keep the repository where only you (or root) can change it, .git included "
                      "(chmod -R go-w, no ACLs), or clone it into a directory of your own");
  }
  return git_dirs.front();
}

namespace {

// Git in GIT_DIR, a git directory already checked or made here (a borrowed one: see
// objects_only), as git_command runs it.
proc::Command git_command_in(const fs::path& git_dir, const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  // No configuration but the repository's own (none of the caller's: $HOME, $XDG_CONFIG_HOME,
  // /etc), and the git directory as the work tree and the current one: a .gitattributes in a
  // work tree changes a diff, and core.worktree may name anyone's. What the repository's config
  // could still make git run or read outside what was checked, kOverrides turns off.
  std::vector<std::string> argv{"git", "--git-dir=" + git_dir.string(), "--work-tree=" + git_dir.string()};
  for (const char* setting : kOverrides) argv.insert(argv.end(), {"-c", setting});
  argv.insert(argv.end(), args.begin(), args.end());
  auto cmd = command(argv, timeout);
  // What a repository makes git print is anyone's to make huge (thirty-ninth attack: a 300 KB
  // repository's diff took gigabytes): as much as a patch file may hold, and then refused.
  cmd.max_output = kMaxInputBytes;
  cmd.unset_env_prefixes = {"GIT_", "XDG_"};
  cmd.env = {{"GIT_CONFIG_GLOBAL", "/dev/null"}, {"GIT_CONFIG_NOSYSTEM", "1"}, {"GIT_NO_LAZY_FETCH", "1"},
             {"GIT_NO_REPLACE_OBJECTS", "1"}, {"HOME", "/nonexistent"}};
  cmd.cwd = git_dir;
  return cmd;
}

}  // namespace

proc::Command git_command(const fs::path& repo, const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  return git_command_in(require_trusted_git(repo), args, timeout);
}

namespace {

std::string resolve_commit(const fs::path& repo, const std::string& name) {
  auto r = proc::run(git_command(repo, {"rev-parse", "--verify", "--quiet", name + "^{commit}"}, 1min));
  if (!r.ok())
    throw UserError("git source " + repo.string() + ": no commit named `" + name + "`",
                    "name a commit, tag or branch that exists in that tree (git -C " +
                        shell_quote(repo.string()) + " log --oneline)");
  return trim(r.out);
}

std::string debian_package_version() {
  if (!proc::have_program("dpkg-query")) return {};
  auto r = proc::run(command({"dpkg-query", "-W", "-f=${Version}", kDebianPackage}, 30s));
  return r.ok() ? trim(r.out) : std::string{};
}

// The directory holding the top-level Makefile: the archive's single top directory, or
// the unpack directory itself.
// A link is neither (twenty-eighth attack: an archive whose one entry is a link to a root-owned
// directory made the cached tree that link, and root's patch(1) edited the files it led to).
fs::path find_tree(const fs::path& unpacked) {
  if (fs::exists(unpacked / "Makefile")) return unpacked;
  std::vector<fs::path> dirs;
  for (auto& e : fs::directory_iterator(unpacked))
    if (e.symlink_status().type() == fs::file_type::directory) dirs.push_back(e.path());
  if (dirs.size() == 1 && fs::exists(dirs[0] / "Makefile")) return dirs[0];
  return unpacked;
}

// What a source may unpack to, far beyond a kernel's (6.1: 1.3 GB in 80,000 entries).
constexpr uint64_t kMaxSourceBytes = uint64_t(8) << 30;
constexpr size_t kMaxSourceEntries = 1'000'000;

// Refuses, before anything is unpacked, an ARCHIVE that would unpack to more than a kernel
// source could (thirty-third attack: one of 150 KB unpacked to 1 GiB and stayed in the
// cache). Its members' data as tar extracts them is counted, not the sizes its headers claim
// (thirty-fourth: a sparse member listed as 1 byte wrote 64 MiB), up to the bound; its
// entries with every directory their names imply (thirty-fourth: 11 members made 18,013).
// Either over its bound, or the archive unreadable: UserError.
void require_bounded(const fs::path& archive, const std::string& origin) {
  // tar -v names each member on a line of its own (escaped), whatever its header says
  // (thirty-fifth attack: a time too large to print as a date shifted the words of a long
  // listing, and its members went uncounted); every line counts, with every directory on
  // its way. The whole pipeline must succeed: a measurement cut short measures nothing.
  auto cmd = command({"bash", "-o", "pipefail", "-c", "tar -xvO -f \"$0\" | head -c \"$1\" | wc -c", archive.string(),
                      std::to_string(kMaxSourceBytes + 1)},
                     30min);
  cmd.max_output = 256 << 20;  // the names (stderr) of about a million entries
  auto r = proc::run(cmd);
  std::set<std::string> entries;
  for (auto& name : split(r.err, '\n')) {
    for (size_t slash = name.find('/'); slash != std::string::npos && entries.size() <= kMaxSourceEntries;
         slash = name.find('/', slash + 1))
      entries.insert(name.substr(0, slash));
    entries.insert(name);
    if (entries.size() > kMaxSourceEntries) break;
  }
  const auto bytes = std::strtoull(trim(r.out).c_str(), nullptr, 10);
  if (r.overflowed || entries.size() > kMaxSourceEntries || bytes > kMaxSourceBytes)
    throw UserError("kernel source " + origin + " would unpack to more than any kernel source: " +
                        (bytes > kMaxSourceBytes ? "more than " + std::to_string(kMaxSourceBytes >> 30) + " GiB"
                                                 : "more than " + std::to_string(kMaxSourceEntries) + " files and directories"),
                    "check that it is the kernel source you meant; nothing was unpacked");
  if (!r.ok())
    throw UserError("cannot unpack kernel source " + origin + ": " + r.describe(),
                    "check that it is a complete .tar, .tar.gz or .tar.xz archive; nothing was unpacked");
}

// A git directory that borrows a repository's objects and nothing else, and their format.
struct Borrowed {
  fs::path dir;
  std::string format;  // sha1 | sha256
};

// Made at DIR for REPO: read through it, a commit is its own tree, whatever REPO's replace
// refs, info/attributes (export-ignore, export-subst), grafts or config would make git write
// instead. The cache keeps a tree under its commit's id for every later build from any
// repository (forty-first attack: a sudo user's replace ref put another tree in the cache
// under the genuine commit's id).
Borrowed objects_only(const std::string& repo, const fs::path& dir) {
  const auto common = trim(proc::run_checked(git_command(repo, {"rev-parse", "--path-format=absolute", "--git-common-dir"}, 1min)).out);
  const auto format = trim(proc::run_checked(git_command(repo, {"rev-parse", "--show-object-format"}, 1min)).out);
  if (format != "sha1" && format != "sha256")
    throw UserError("git source " + repo + " keeps its objects in a format ksandwich does not know: " + one_line(format.substr(0, 40)),
                    "use a repository of SHA-1 or SHA-256 objects");
  const auto objects = fs::path(common) / "objects";
  fs::create_directories(dir / "objects/info");
  fs::create_directories(dir / "refs");
  write_file(dir / "HEAD", "ref: refs/heads/none\n");
  if (format != "sha1")  // the objects are read as the repository's format says (forty-second attack)
    write_file(dir / "config", "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = " + format + "\n");
  write_file(dir / "objects/info/alternates", path_git_reads(objects.string(), dir / "objects/info/alternates").string() + "\n");
  return {dir, format};
}

// The id git gives the tree DIR holds, raw (FORMAT: sha1 or sha256): a file is a blob, 100755
// when its owner may run it; a link a blob of its target; a directory a tree of its entries in
// git's order (a directory's name sorts as if it ended in '/'). None when DIR holds what no
// git tree holds: an empty directory (git archive's form of a submodule, which a rewritten
// subtree can add unchecked: forty-third attack) or anything but files, links and directories.
std::optional<std::string> tree_id(const fs::path& dir, const std::string& format) {
  struct Entry {
    std::string key, mode, name, id;
  };
  std::vector<Entry> entries;
  for (auto& e : fs::directory_iterator(dir)) {
    const auto name = e.path().filename().string();
    const auto st = e.symlink_status();
    if (fs::is_symlink(st)) {
      entries.push_back({name, "120000", name, git_object_id(format, "blob", fs::read_symlink(e.path()).string(), true)});
    } else if (fs::is_directory(st)) {
      auto sub = tree_id(e.path(), format);
      if (!sub) return std::nullopt;
      entries.push_back({name + "/", "40000", name, *sub});
    } else if (fs::is_regular_file(st)) {
      const bool runs = (st.permissions() & fs::perms::owner_exec) != fs::perms::none;
      entries.push_back({name, runs ? "100755" : "100644", name, git_blob_id(format, e.path(), true)});
    } else {
      return std::nullopt;
    }
  }
  if (entries.empty()) return std::nullopt;
  std::sort(entries.begin(), entries.end(), [](auto& a, auto& b) { return a.key < b.key; });
  std::string content;
  for (auto& e : entries) content += e.mode + " " + e.name + '\0' + e.id;
  return git_object_id(format, "tree", content, true);
}

// What git archive wrote for COMMIT at ROOT is the commit's own tree, or a UserError: the
// commit's object hashes to its id, and the files, hashed as git hashes them, to the tree it
// names (forty-second attack: a sudo user's object file rewritten in place put another file in
// the cache under the genuine commit's id; git reads objects without checking them).
void require_commit_tree(const Borrowed& git, const std::string& commit, const fs::path& root, const std::string& origin) {
  const auto text = proc::run_checked(git_command_in(git.dir, {"cat-file", "commit", commit}, 1min)).out;
  const auto tree = text.starts_with("tree ") ? text.substr(5, text.find('\n') - 5) : std::string();
  std::optional<std::string> found;
  try {
    found = tree_id(root, git.format);
  } catch (const std::exception&) {  // a path too long to walk, a file gone: not the commit's tree
  }
  if (git_object_id(git.format, "commit", text) != commit || tree.empty() || !found || hex(*found) != tree)
    throw UserError("git source " + origin + " at " + commit.substr(0, 12) +
                        ": what git archive wrote is not the commit's own tree (an object that does not hash to its "
                        "id, a submodule, or .gitattributes that rewrite files on export)",
                    "check the repository with `git fsck`, or build from a fresh clone of it; nothing was kept");
}

void unpack(const experiment::KernelSource& source, const SourceIdentity& id,
            const fs::path& into) {
  auto staging = into / "unpack";
  fs::create_directories(staging);
  if (source.kind == "git") {
    // The archive itself bounded too: the tree's own .gitattributes (export-subst, ident)
    // expand what git writes (thirty-fourth attack: 44 KB of blobs became 400 MB).
    auto tar = into / "source.tar";
    const auto git = objects_only(id.origin, into / "git");
    auto archive = git_command_in(git.dir, {"archive", "--format=tar", "-o", fs::absolute(tar).string(), id.commit}, 30min);
    archive.argv.insert(archive.argv.begin(), {"prlimit", "--fsize=" + std::to_string(kMaxSourceBytes), "--"});
    if (auto r = proc::run(archive); !r.ok())
      throw UserError("cannot archive " + id.origin + " at " + id.commit.substr(0, 12) + ": " + r.describe(),
                      "a kernel tree's archive is at most " + std::to_string(kMaxSourceBytes >> 30) + " GiB; check the repository");
    require_bounded(tar, id.origin);
    proc::run_checked(command({"tar", "-xf", tar.string(), "--no-same-owner", "--no-same-permissions", "-C", staging.string()}, 30min));
    fs::remove(tar);
    require_commit_tree(git, id.commit, staging, id.origin);
    fs::remove_all(into / "git");
  } else {
    // Read once: the archive unpacked is the one hashed into the source's identity
    // (forty-third attack: a sudo user's tarball renamed over after it was hashed was unpacked
    // under the genuine one's hash, for every later build of the genuine tarball).
    const auto copy = into / "source.archive";
    std::error_code ec;
    fs::copy_file(id.origin, copy, ec);
    if (ec || sha256_file(copy) != id.archive_sha256)
      throw UserError("kernel source " + id.origin + (ec ? " cannot be read: " + ec.message() : " changed while it was read"),
                      "keep the tarball unchanged while ksandwich reads it; nothing was unpacked");
    require_bounded(copy, id.origin);
    auto r = proc::run(command({"tar", "-xf", copy.string(), "--no-same-owner", "--no-same-permissions", "-C", staging.string()}, 30min));
    fs::remove(copy);
    if (!r.ok())
      throw UserError("cannot unpack kernel source " + id.origin + ": " + r.describe(),
                      "check that it is a complete .tar, .tar.gz or .tar.xz archive");
  }
  auto tree = find_tree(staging);
  // tar makes what the archive says as root: no device node or set-ID program is kept.
  require_plain_tree(tree, "kernel source " + id.origin);
  fs::rename(tree, into / "tree");
  std::error_code ec;
  fs::remove_all(staging, ec);
}

}  // namespace

fs::path ensure_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  // The owner's alone: what is unpacked and built in it is what a patch's make left.
  if (!ec) fs::permissions(dir, fs::perms::owner_all, ec);
  if (ec || access(dir.c_str(), W_OK) != 0)
    throw UserError("cannot use the cache directory " + dir.string() + ": " +
                        (ec ? ec.message() : std::string("not writable")),
                    "set KSANDWICH_CACHE (or --cache) to a writable directory outside the "
                    "repository");
  return dir;
}

nlohmann::json to_json(const SourceIdentity& s) {
  return {{"kind", s.kind},
          {"origin", s.origin},
          {"version", s.version},
          {"archive_sha256", s.archive_sha256},
          {"commit", s.commit},
          {"package_version", s.package_version}};
}

SourceIdentity source_identity_from_json(const nlohmann::json& j) {
  SourceIdentity s;
  s.kind = j.value("kind", "");
  s.origin = j.value("origin", "");
  s.version = j.value("version", "");
  s.archive_sha256 = j.value("archive_sha256", "");
  s.commit = j.value("commit", "");
  s.package_version = j.value("package_version", "");
  return s;
}

fs::path default_cache_root() {
  const char* env = std::getenv("KSANDWICH_CACHE");
  return check_cache_root(env && *env ? fs::path(env) : fs::path("/var/cache/ksandwich"));
}

fs::path check_cache_root(const fs::path& root, const std::string& what) {
  if (::geteuid() != 0) return root;  // anyone else builds and boots only what they may change
  const std::string hint =
      "as root, use a cache only root can change: unset KSANDWICH_CACHE and CCACHE_DIR for root's own in "
      "/var/cache/ksandwich, or make it, its folders and every directory above it root's, and chmod go-w";
  auto refuse = [&](const std::string& why, const std::string& also = "") {
    throw UserError(what + " " + root.string() + ": " + why, also.empty() ? hint : also);
  };
  {
    // Under sudo, the place as they see it first: one answer for a cache named where they
    // cannot look, whatever root would find there (sixty-sixth attack: a file, a directory,
    // nothing, another's directory and a link each told themselves, and root filled a
    // directory they could not see with gigabytes).
    AsInvokingUser as;
    if (!as.who().empty()) {
      auto seen = fs::absolute(root).lexically_normal();
      while (seen.has_relative_path() && !fs::exists(status_as_invoking_user(seen))) seen = seen.parent_path();
      if (!fs::is_directory(status_as_invoking_user(seen)) || !as.may(seen, X_OK))
        refuse(as.who() + ", cannot reach a directory there",
               "name a cache in a directory you can reach yourself, or leave KSANDWICH_CACHE unset for root's own");
    }
  }
  if (auto why = untrusted_on_the_way(root, PathRole::kTrustedDirectory)) refuse(*why);
  const auto real = fs::weakly_canonical(fs::absolute(root));  // resolvable: checked above
  // Root's alone, the way there included: root makes, chmods, builds in and removes its
  // folders by name long after this check, so no one else, not the sudo user either, may be
  // able to put a link in their place (forty-fifth attack: a sudo user's cache, its build/
  // swapped for a link after the check, had root chmod another directory 0700 and build in it).
  fs::path way;
  for (auto& part : real) {
    way /= part;
    struct stat st{};
    if (::lstat(way.c_str(), &st) == 0 && st.st_uid != 0) refuse(way.string() + " " + owner_text(way, st));
  }
  // Its entries (build/, source/, ccache's 0-f and ccache.conf, which names commands ccache
  // runs) are root's too, and never links.
  std::error_code ec;
  for (auto& entry : fs::directory_iterator(real, ec)) {
    struct stat st{};
    if (::lstat(entry.path().c_str(), &st) != 0) continue;
    if (S_ISLNK(st.st_mode))
      refuse(entry.path().string() + " is a symbolic link",
             "a link could lead anywhere: move the folder itself there, or point the cache at the other disk");
    if (st.st_uid != 0 || !trusted_dir(st) || others_may_write(entry.path(), st))
      refuse(entry.path().string() + " " + owner_text(entry.path(), st));
  }
  return real;
}

fs::path origin_path(const experiment::KernelSource& source) {
  if (source.kind == "debian" && source.path.empty()) return kDebianTarball;
  return source.path;
}

bool is_kernel_release(std::string_view s) {
  return !s.empty() && s.size() <= 64 && s.front() != '.' && s.front() != '-' &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) {
           return std::isalnum(c) || std::string_view("._+-~").find(static_cast<char>(c)) != std::string_view::npos;
         });
}

std::string kernel_version_from_makefile(std::string_view makefile) {
  std::map<std::string, std::string> vars;
  for (auto& line : split(makefile, '\n')) {
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    auto name = trim(std::string_view(line).substr(0, eq));
    if (name == "VERSION" || name == "PATCHLEVEL" || name == "SUBLEVEL" || name == "EXTRAVERSION")
      if (!vars.count(name)) vars[name] = trim(std::string_view(line).substr(eq + 1));
    if (vars.size() == 4) break;
  }
  if (vars["VERSION"].empty() || vars["PATCHLEVEL"].empty()) return {};
  auto version = vars["VERSION"] + "." + vars["PATCHLEVEL"];
  if (!vars["SUBLEVEL"].empty()) version += "." + vars["SUBLEVEL"];
  return version + vars["EXTRAVERSION"];
}

namespace {

const std::string& process_tag() {
  static const std::string tag = [] {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    std::error_code ec;
    auto pid_ns = fs::read_symlink("/proc/self/ns/pid", ec).string();
    auto boot = try_read_file("/proc/sys/kernel/random/boot_id").value_or("");
    return sha256_hex(std::string(host) + "\n" + boot + pid_ns).substr(0, 12);
  }();
  return tag;
}

}  // namespace

std::string temporary_name(const std::string& what) {
  return ".tmp-" + what + "-" + process_tag() + "-" + std::to_string(getpid());
}

void sweep_stale_temporaries(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  const std::string ours = "-" + process_tag() + "-";
  for (auto& e : fs::directory_iterator(dir, ec)) {
    auto name = e.path().filename().string();
    if (!starts_with(name, ".tmp-")) continue;
    auto dash = name.rfind('-');
    if (dash < ours.size() || name.compare(dash + 1 - ours.size(), ours.size(), ours) != 0) continue;  // not ours to judge
    pid_t pid = static_cast<pid_t>(std::atoi(name.c_str() + dash + 1));
    if (pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH)) continue;  // still running
    fs::remove_all(e.path(), ec);
  }
}

namespace {

// An arm's commit is a diff from the source's commit: only a git source has one.
void require_git_for_commit(const std::string& kind) {
  if (kind != "git")
    throw UserError("an arm's commit needs a git source (this one is " + kind + ")",
                    "set \"source\": {\"kind\": \"git\", \"path\": ..., \"commit\": BASELINE}");
}

}  // namespace

std::string kind_of(const experiment::KernelSource& source) { return source.kind.empty() ? "debian" : source.kind; }

CommitDiff commit_diff(const SourceIdentity& base, const std::string& name, const fs::path& cache_root) {
  require_git_for_commit(base.kind);  // a git identity always carries its resolved commit
  CommitDiff d;
  d.commit = resolve_commit(base.origin, name);
  // Anyone's words, printed by build and in reports: one line (twenty-fifth attack).
  d.subject = one_line(trim(proc::run_checked(git_command(base.origin, {"log", "-1", std::string("--format=") + kGitSubject, d.commit}, 1min)).out));
  // The same text from any clone and any user's git config (it is hashed into the kernel's
  // cache key): full blob ids, fixed prefixes and algorithm, no renames, colour or drivers,
  // and hunk headers without the function git names after them, which follows the
  // checked-out .gitattributes (diff=cpp) and so differs between a clone with a work tree
  // and one without.
  auto diff = proc::run(git_command(base.origin, {"-c", "diff.suppressBlankEmpty=false", "diff",
                                        "--full-index", "--no-renames", "--no-color", "--no-ext-diff",
                                        "--no-textconv", "--no-relative", "--diff-algorithm=myers",
                                        "--indent-heuristic", "-U3", "--inter-hunk-context=0", "-O/dev/null",
                                        "--src-prefix=a/", "--dst-prefix=b/", base.commit, d.commit}, 10min));
  if (diff.overflowed)
    throw UserError("the diff from " + base.commit.substr(0, 12) + " to commit " + d.commit.substr(0, 12) +
                        " is larger than " + std::to_string(kMaxInputBytes >> 20) + " MiB, as no patch may be",
                    "choose a baseline (source.commit) closer to it");
  if (!diff.ok()) throw SystemError("git diff in " + base.origin, diff.describe());
  const auto& raw = diff.out;
  auto lines = split(raw, '\n');
  for (auto& line : lines) {
    // patch(1) skips a binary change without a word: the tree would not be the commit's.
    if (starts_with(line, "Binary files "))
      throw UserError("commit " + d.commit.substr(0, 12) + " changes a binary file since " + base.commit.substr(0, 12) +
                          " (" + line + "), which patch(1) cannot apply",
                      "choose a baseline (source.commit) closer to it, or a commit without binary changes");
    if (auto end = starts_with(line, "@@ -") ? line.find(" @@", 4) : std::string::npos; end != std::string::npos)
      line.resize(end + 3);
  }
  d.text = join(lines, "\n");
  d.empty = d.text.empty();
  if (cache_root.empty()) return d;
  d.diff = ensure_dir(cache_root / "commits") / (base.commit + ".." + d.commit + ".diff");
  if (read_cache_file(d.diff, d.text.size()) != d.text) write_file_atomic(d.diff, d.text);
  return d;
}

fs::path keep_in_cache(const fs::path& cache_root, const std::string& folder, std::string_view text,
                       const std::string& suffix) {
  // Anyone may search the folder, not list it, and read a file in it: to name one is to know
  // its content. So a sudo user reads the series they chose from their own mailbox, as every
  // file root reads for them (sixty-fifth attack: `sudo ksandwich run --patch T --message-id`
  // was refused its own series, kept in root's 0700 folder).
  std::error_code ec;  // where a mode cannot be had, the user's read of it says so
  auto dir = ensure_dir(cache_root / folder);
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec, ec);
  auto path = dir / (sha256_hex(text) + suffix);
  if (read_cache_file(path, text.size()) != text) write_file_atomic(path, text);
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read, ec);
  return path;
}

std::string check_source(const experiment::KernelSource& source, const std::string& later_commit) {
  auto origin = origin_path(source);
  // As the sudo user sees it (sixty-sixth attack: a file, a directory, a git tree and nothing in
  // a root-only place each got their own message).
  if (source.kind == "git") {
    if (!fs::is_directory(status_as_invoking_user(origin)))
      throw UserError("kernel source not found: git tree " + origin.string() + " does not exist",
                      "give the path of a local kernel git tree in source.path");
    if (source.commit.empty())
      throw UserError("git source " + origin.string() + ": no commit named",
                      "set source.commit to a commit, tag or branch");
    if (!later_commit.empty()) (void)resolve_commit(origin, later_commit);
    return resolve_commit(origin, source.commit);
  }
  if (!later_commit.empty()) require_git_for_commit(kind_of(source));
  if (!fs::is_regular_file(status_as_invoking_user(origin))) {
    std::string hint = kind_of(source) == "debian"
        ? "install it with `apt-get install linux-source-6.1` (tools/setup.sh does), or name "
          "another source in the experiment (source.kind tarball or git)"
        : "give the path of a kernel .tar, .tar.gz or .tar.xz in source.path";
    throw UserError("kernel source not found: " + origin.string(), hint);
  }
  return "";
}

namespace {

// What names SOURCE, without its version (which its unpacked Makefile gives).
SourceIdentity identify(const experiment::KernelSource& source) {
  SourceIdentity id;
  id.kind = kind_of(source);
  auto origin = origin_path(source);
  id.origin = origin.string();
  id.commit = check_source(source);
  if (id.kind != "git") {
    id.archive_sha256 = sha256_file(origin);
    if (id.kind == "debian" && origin == kDebianTarball) id.package_version = debian_package_version();
  }
  return id;
}

// ID's tree in SOURCES (<cache>/source) with the version recorded beside it, if unpacked there.
// A source cache entry ksandwich did not make (WHY), and how to be rid of it.
UserError entry_not_ours(const fs::path& entry, const std::string& why) {
  return UserError("the source cache's entry " + entry.string() + " " + why,
                   "remove it (rm -r " + shell_quote(entry.string()) + "); the next build unpacks the source again");
}

std::optional<PreparedSource> unpacked(SourceIdentity id, const fs::path& sources) {
  auto entry = sources / id.key();
  if (!fs::exists(entry / "tree")) return std::nullopt;
  // Root's own, or no entry: its version names the build's directory and its tree is built
  // (thirty-eighth attack: a planted source.json's version put a build of the planted tree
  // outside the cache).
  auto not_ours = [&] { return entry_not_ours(entry, "is not one ksandwich made, or was changed since"); };
  auto cached = read_cache_file(entry / "source.json", size_t(1) << 20);
  auto j = nlohmann::json::parse(cached.value_or(""), nullptr, false);
  if (!j.is_object() || untrusted_on_the_way(entry / "tree", PathRole::kTrustedDirectory)) throw not_ours();
  SourceIdentity known;
  try {
    known = source_identity_from_json(j);
  } catch (const nlohmann::json::exception&) {
    throw not_ours();
  }
  // And of this source, by the key its record gives: an archive's entry is never a commit's tree.
  if (!is_kernel_release(known.version) || known.key() != id.key())
    throw not_ours();
  id.version = known.version;
  if (id.package_version.empty()) id.package_version = known.package_version;
  return PreparedSource{id, entry / "tree"};
}

}  // namespace

PreparedSource find(const experiment::KernelSource& source, const fs::path& cache_root) {
  auto id = identify(source);
  if (auto found = unpacked(id, cache_root / "source")) return *found;
  if (id.kind == "git") {
    auto show = git_command(id.origin, {"show", id.commit + ":Makefile"}, 1min);
    show.max_output = size_t(1) << 20;  // as an unpacked tree's Makefile is read
    auto r = proc::run(show);
    // Unknown unless it is a release: it names a cache directory (thirty-seventh attack).
    if (auto version = r.ok() ? kernel_version_from_makefile(r.out) : ""; is_kernel_release(version)) id.version = version;
  }
  return {id, {}};
}

PreparedSource prepare(const experiment::KernelSource& source, const fs::path& cache_root,
                       const std::function<void(const std::string&)>& note) {
  auto id = identify(source);
  auto sources = ensure_dir(cache_root / "source");
  if (auto found = unpacked(id, sources)) return *found;
  auto entry = sources / id.key();

  sweep_stale_temporaries(sources);
  if (note) note("unpacking " + id.origin + (id.commit.empty() ? "" : " at " + id.commit));
  ScopedDir tmp(sources / temporary_name(id.key()));
  unpack(source, id, tmp.path());
  std::optional<std::string> makefile;
  try {  // bounded and never through a link: the tarball's Makefile may be anything
    makefile = read_regular_file(tmp.path() / "tree" / "Makefile", size_t(1) << 20, Links::refuse);
  } catch (const SystemError&) {
  }
  id.version = makefile ? kernel_version_from_makefile(*makefile) : "";
  if (id.version.empty())
    throw UserError(id.origin + " is not a kernel source: no Makefile with VERSION and "
                    "PATCHLEVEL at its top",
                    "name a Linux source tarball or git tree");
  // It names the build's directory (thirty-sixth attack: VERSION = ../../x built elsewhere).
  if (!is_kernel_release(id.version))
    throw UserError(id.origin + " is not a kernel source: its Makefile's version \"" +
                        one_line(id.version.substr(0, 80)) + "\" is not a kernel release",
                    "VERSION, PATCHLEVEL, SUBLEVEL and EXTRAVERSION hold letters, digits and ._+-~ only");
  write_file_atomic(tmp.path() / "source.json", to_json(id).dump(2) + "\n");

  std::error_code ec;
  fs::rename(tmp.path(), entry, ec);
  if (!ec) {
    tmp.release();
    return {id, entry / "tree"};
  }
  // Another run finished the same source first (ours is dropped): its entry is checked as any
  // cached one is (thirty-ninth attack: an entry planted while we unpacked was built as the source).
  if (auto found = unpacked(id, sources)) return *found;
  throw entry_not_ours(entry, "is in the way, and is not one ksandwich made");
}

}  // namespace ks::source

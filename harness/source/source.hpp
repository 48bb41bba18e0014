#pragma once
// The kernel source an experiment names, and its identity: Debian's linux-source-6.1
// tarball (the default), another local tarball, or a local git tree at a named commit.
// A source is unpacked once into <cache>/source/<sha256-or-commit>/tree and never modified:
// builds hard-link it (patch(1) replaces a file instead of writing into it).
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "experiment/experiment.hpp"
#include "proc/runner.hpp"

namespace ks::source {

namespace fs = std::filesystem;

inline constexpr const char* kDebianTarball = "/usr/src/linux-source-6.1.tar.xz";
inline constexpr const char* kDebianPackage = "linux-source-6.1";

struct SourceIdentity {
  std::string kind;            // debian | tarball | git
  std::string origin;          // the tarball or git tree it came from
  std::string version;         // "6.1.192", from the Makefile
  std::string archive_sha256;  // debian, tarball
  std::string commit;          // git: the full commit id the name resolved to
  std::string package_version; // debian: the package's version, when dpkg knows it

  // What names the source in the cache and in build keys: the archive hash, or "git-" and the
  // commit. A SHA-256 repository's commit id is 64 hex digits as an archive's hash is
  // (forty-fourth attack: a tarball whose bytes are a commit object was served as that
  // commit's tree, and the reverse).
  std::string key() const { return archive_sha256.empty() ? "git-" + commit : archive_sha256; }
};

nlohmann::json to_json(const SourceIdentity& s);
SourceIdentity source_identity_from_json(const nlohmann::json& j);

struct PreparedSource {
  SourceIdentity identity;
  fs::path tree;  // the unpacked, pristine tree (holds the top-level Makefile)
};

// $KSANDWICH_CACHE, or /var/cache/ksandwich, checked by check_cache_root.
// For root, throws UserError unless the git tree REPO and its git directory (config, hooks,
// objects: what git runs and what the source is) are no one else's to change, ACLs counted.
// The way is checked on every call; what is in a git directory, once per process. Returns
// that git directory, absolute (REPO/.git, the one a .git file names, or REPO when bare).
fs::path require_trusted_git(const fs::path& repo);
// A git command on the git source REPO: REPO checked as above, its git directory given to git
// (--git-dir: git never looks for another one above it), and no GIT_* variable of the
// caller's passed on (GIT_DIR from a hook would name another repository).
proc::Command git_command(const fs::path& repo, const std::vector<std::string>& args, std::chrono::milliseconds timeout);
// `git log`'s format of a commit's subject as ksandwich keeps it (identities, bundles, bisect):
// at most 160 columns of anyone's words ("..": cut), padded by git, so trimmed by the reader.
inline constexpr const char* kGitSubject = "%<(160,trunc)%s";
// More entries than a git directory of the kernel has (~80,000 with every object loose) by far.
inline constexpr size_t kMaxGitEntries = 1'000'000;

fs::path default_cache_root();
// A directory of the cache (source/, build/, commits/): made when missing and its owner's
// alone (0700): a source unpacked or a kernel built there holds what the archive or a patch's
// make chose, which no one else may reach while it is checked. Throws UserError when it
// cannot be made or written.
fs::path ensure_dir(const fs::path& dir);

// The cache holds what root compiles, boots and kexecs: a Makefile or a kernel planted in it
// runs as root. So for root, the way to ROOT and ROOT itself must be such that no one else can
// change them (util's untrusted_on_the_way, as a cache), every directory there is root's (not
// the sudo user's either: root makes and removes folders in it by name), and its entries are
// root's and no links. Returns ROOT resolved (for anyone else ROOT as given, unchecked); throws
// UserError naming WHAT. (ccache's directory too: what it hands back is linked into the kernel.)
fs::path check_cache_root(const fs::path& root, const std::string& what = "kernel cache");

// Checks, touching nothing, that the source exists (the git tree and its commit, and
// LATER_COMMIT when given - an arm's commit, which needs a git source; or the archive).
// Returns the resolved commit of a git source, "" for an archive. Throws UserError.
std::string check_source(const experiment::KernelSource& source, const std::string& later_commit = "");

// Checks the source exists, computes its identity (hashes the archive, resolves the
// commit) and unpacks it unless the cache already holds it. Unpacking goes into
// <cache>/source/.tmp-*, renamed into place when complete, so a crash or Ctrl-C never
// leaves a half-unpacked tree under a real key. NOTE is told before a slow step.
// Throws UserError when the source is missing or unusable.
PreparedSource prepare(const experiment::KernelSource& source, const fs::path& cache_root,
                       const std::function<void(const std::string&)>& note = {});

// What prepare would give, touching nothing (a dry run): the identity, and the tree when the
// cache holds it unpacked (else the tree is empty, and the version too unless a git source's
// commit has a Makefile that gives it). Throws UserError when the source is missing.
PreparedSource find(const experiment::KernelSource& source, const fs::path& cache_root);

// A later commit of a git source, as what an arm with `commit` builds: the source's own
// tree plus `git diff <source commit> <commit>`. The diff is kept at
// <cache>/commits/<source commit>..<commit>.diff (written atomically; empty when the trees
// are the same; nothing is written when CACHE_ROOT is empty). Throws UserError when BASE is
// not a git source or NAME names no commit.
struct CommitDiff {
  std::string commit;   // the full id NAME resolved to
  std::string subject;  // its subject line
  std::string text;     // the diff
  fs::path diff;        // where it is kept
  bool empty = false;
};
CommitDiff commit_diff(const SourceIdentity& base, const std::string& name, const fs::path& cache_root);

// TEXT kept at <cache>/<folder>/<sha256 of TEXT><suffix>, written atomically unless already
// there: an input made from the user's (one series out of a saved thread) that a run's
// bundle and a later --resume read there. The folder is searchable, not listable, by others,
// the file readable: whoever knows the text may read it. Throws UserError when the cache is
// not writable.
fs::path keep_in_cache(const fs::path& cache_root, const std::string& folder, std::string_view text,
                       const std::string& suffix);

// The path a source names (the Debian tarball when none is given).
fs::path origin_path(const experiment::KernelSource& source);
// Its kind: "debian" when none is given.
std::string kind_of(const experiment::KernelSource& source);

// "6.1.192" from the top-level Makefile (VERSION, PATCHLEVEL, SUBLEVEL, EXTRAVERSION);
// empty when the text is not a kernel Makefile. Pure.
std::string kernel_version_from_makefile(std::string_view makefile);
// A kernel release as uname gives it ("6.1.192-ks-patched"): at most 64 ASCII letters,
// digits and ._+-~, starting with neither . nor -. A version or release outside it (a
// Makefile's, make's kernel.release) names no cache directory and reaches no report.
bool is_kernel_release(std::string_view s);

// A temporary's name in a cache directory: ".tmp-WHAT-<tag>-<pid>", the tag naming this boot
// of this machine and this PID namespace, where alone the pid means this process.
std::string temporary_name(const std::string& what);
// Removes <dir>/.tmp-* entries whose owning process (the pid in the name) is gone: what a
// killed run left behind. Only this machine's and PID namespace's (by the tag): a pid of
// another node sharing the cache, or of another namespace, says nothing here (fortieth
// attack: a build in its own PID namespace deleted a live run's unpack).
void sweep_stale_temporaries(const fs::path& dir);

}  // namespace ks::source

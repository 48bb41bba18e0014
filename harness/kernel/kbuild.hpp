#pragma once
// Building one arm's kernel, matched to the other arm.
//
// Every arm is built out of tree with the same source, normalized config, toolchain and
// Kbuild identity (KBUILD_BUILD_TIMESTAMP/USER/HOST/VERSION); only LOCALVERSION
// (-ks-<arm>) and the patches differ. Builds live in a cache keyed by (source, config
// inputs, patches, toolchain, Kbuild identity, arm), so asking again for the same kernel
// builds nothing. An arm other than the unpatched control starts from a copy of the
// control's finished build tree and rebuilds only what its patches touch.
//
// Cache layout (root: $KSANDWICH_CACHE or /var/cache/ksandwich, never in the repo):
//   source/<sha256-or-commit>/tree         pristine unpacked source (hard-linked by builds)
//   build/<version>-ks-<arm>-<key>/        one finished build:
//       identity.json  bzImage  config  build.log  linux/ (source + ks-out/, the O= tree)
//   build/.tmp-*                           a build in progress; renamed into place when done
//   ccache/                                the compiler cache
//   logs/                                  logs of failed builds
//
// The identity JSON (identity.json, BuiltKernel::identity, the bundle's builds.<arm>):
//   { "arm", "key",
//     "source":    {kind, origin, version, archive_sha256, commit, package_version},
//     "config":    {base, base_sha256, fragments: [{name, path, sha256}], sha256, symbols_checked},
//     "toolchain": {compiler, linker, make, ccache, make_variables: []},
//     "kbuild":    {timestamp, user, host, version, localversion},
//     "kernel_release",
//     "commit":    {name, sha, subject, diff, file}  (an arm built at a later commit of a git
//                   source: unless the trees are the same, its diff is patches[0], whose
//                   file is `file`, "git diff <source>..<commit>")
//     "patches":   [{file, file_sha256, index, count, subject, author, date, message_id,
//                    sha256, files}],
//     "cover_letter": {subject, author, date, message_id}            (a series' [PATCH 0/n])
//     "bzimage":   {path, sha256, bytes},
//     "build":     {mode: full|incremental|preflight, reused_from, seconds, compiled,
//                   compiled_files, jobs, started_at, finished_at, dir, log} }
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kernel/progress.hpp"
#include "experiment/experiment.hpp"

namespace ks::kernel {

namespace fs = std::filesystem;

struct KbuildIdentity {
  std::string timestamp = "Sat Jan  1 00:00:00 UTC 2000";  // must parse with `date -d`
  std::string user = "ksandwich";
  std::string host = "ksandwich";
  std::string version = "1";  // the #1 in `uname -v`
};

struct BuildRequest {
  std::string arm = "control";        // LOCALVERSION -ks-<arm>; letters, digits, - and _
  experiment::KernelSource source;    // default: Debian's linux-source-6.1 tarball
  experiment::KernelConfig config;    // base + fragments (names in configs/kernel/ or paths)
  std::string commit;                 // git source: build this later commit as the source's
                                      // tree + `git diff source.commit commit` (before patches)
  std::vector<std::string> patches;   // plain diffs or mailboxes, applied in order
  fs::path repo_dir;                  // where configs/kernel/ and kernel-patches/ live
  fs::path cache_root;                // empty: source::default_cache_root()
  KbuildIdentity kbuild;
  std::vector<std::string> make_variables;  // e.g. "KCFLAGS=-O3"; in the key and the audit
  int jobs = 0;                       // make -j; 0: the number of online CPUs
  std::chrono::minutes make_timeout{60};
  bool use_ccache = true;
  std::optional<fs::path> ccache_dir; // default $CCACHE_DIR, else <cache>/ccache
};

struct BuiltKernel {
  fs::path bzimage;
  fs::path build_dir;  // <cache>/build/<name>
  std::string kernel_release;
  nlohmann::json identity;
  bool cache_hit = false;
  double seconds = 0;  // this call, wall clock (a cache hit takes about a second)
};

// Builds (or finds in the cache) one arm's kernel. Throws UserError for bad input: a
// missing source, fragment or patch file, a config symbol that cannot be satisfied, a
// patch that does not apply, a build that fails. Nothing half-made is left in the cache.
BuiltKernel build_arm(const BuildRequest& request, const Progress& progress);

// Everything build_arm checks before compiling (source, config normalization and
// verification, patches applying, toolchain), without compiling. Returns the identity
// the build will have, minus bzimage and build timings (build.mode "preflight").
nlohmann::json preflight(const BuildRequest& request, const Progress& progress);

// Which earlier builds can tell how many files a build will compile.
struct BuildKind {
  std::string source_version;  // identity source.version
  bool incremental = false;    // a patched arm rebuilt from the control's objects
  std::string config_sha256;   // the normalized config
  std::string base;            // config.base
  std::vector<std::string> fragment_sha256s, patch_sha256s;
};

// The files an earlier build of KIND compiled (identity.json's build.compiled), from the
// finished builds under BUILDS (<cache>/build), same source version and mode only: a full
// build from the full build of the same config, else of the nearest (the same base and
// fragments, then any config); an incremental build - a small, patch-dependent number -
// only from an incremental build of the same patches and config, else none: no estimate
// rather than a wrong one. A KIND without a config hash (a dry run, which normalizes no
// config) takes an incremental build of the same patches, base and fragments.
std::optional<BuildEstimate> estimate_build(const fs::path& builds, const BuildKind& kind);

// What a run would find for REQUEST, for a dry run: nothing is unpacked, built or written
// to the cache. The finished build when the cache holds it; else whether the arm's patches
// apply, checked on copies of the files they touch (in a private temporary directory) taken
// from the unpacked source or a git source's commit (an arm at a later commit without patches
// of its own is not checked: git's diff applies). Throws UserError when one does not apply.
struct ArmLookup {
  std::optional<BuiltKernel> cached;
  std::string source_version;  // "6.1.192"; empty when unknown before unpacking
  std::string patches;         // "its patch applies", why they were not checked, or "" (none)
  // Not in the cache: what the nearest earlier build of its kind took (estimate_build).
  std::optional<BuildEstimate> estimate;
};
ArmLookup look_up(const BuildRequest& request);

// The request for ARM of an experiment: its source, config, the arm's commit and patches, every
// path made absolute. A relative name resolves to the experiment file's directory
// (experiment_dir) first, then to the shipped folder (configs/kernel/ for fragments,
// kernel-patches/ for patches); never to the current directory.
BuildRequest request_for_arm(const experiment::Experiment& e, const std::string& arm,
                             const fs::path& repo_dir, const fs::path& experiment_dir = {});

// The experiment as JSON with every relative file it names (source path, config base and
// fragments, the control arm's patches) made absolute as request_for_arm resolves it, so a
// copy written elsewhere (a series' or a bisection's experiments) names the same files.
nlohmann::json absolute_experiment(const experiment::Experiment& e, const fs::path& experiment_dir,
                                   const fs::path& repo_dir);

// Where a fragment / patch name points: an existing path, else configs/kernel/NAME
// (+ ".config") / kernel-patches/NAME under repo_dir. Throws UserError when none exists.
fs::path resolve_fragment(const std::string& name, const fs::path& repo_dir);
// Whether a config base is one of make's targets (tinyconfig, defconfig, ...), not a file.
bool is_config_target(const std::string& base);
fs::path resolve_patch(const std::string& name, const fs::path& repo_dir);

}  // namespace ks::kernel

#include "kernel/kbuild.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <thread>

#include "kernel/kconfig.hpp"
#include "kernel/kconfig_index.hpp"
#include "kernel/patches.hpp"
#include "kernel/toolchain.hpp"
#include "proc/runner.hpp"
#include "source/source.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/ownership.hpp"
#include "util/hash.hpp"

namespace ks::kernel {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using proc::command;

// Bump when the way a kernel is built changes, so old cache entries are not reused.
constexpr int kRecipe = 1;
// The O= tree is a direct child of the source tree: Kbuild then uses srctree := ..,
// every path in commands and dependency files is relative, and a copy of the whole
// build (source + objects) elsewhere stays valid - what lets a patched arm reuse the
// control's objects instead of rebuilding everything.
constexpr const char* kObjDir = "ks-out";
const std::set<std::string> kConfigTargets = {"tinyconfig", "defconfig", "allnoconfig",
                                              "x86_64_defconfig"};


struct Fragment {
  std::string name;
  fs::path path;
  std::string sha256;
};

// Everything a build is made from, resolved and identified, before anything is built.
struct Inputs {
  std::string arm;
  source::PreparedSource source;
  std::string base;         // a make target (tinyconfig) or the path of a .config
  std::string base_sha256;  // when the base is a file
  std::string base_text;    // its bytes, read once: the ones hashed are the ones built
  std::vector<Fragment> fragments;
  std::vector<ConfigLine> requested;
  std::vector<Patch> patches;
  std::optional<CoverLetter> cover;
  json commit;  // the arm's commit (request.commit), else null
  Toolchain toolchain;
  std::vector<std::string> variables;  // every make gets these
  std::string localversion;
  std::string key;
  fs::path cache;
  fs::path dir;  // cache/build/<name>
  fs::path ccache_dir;
  int jobs = 1;
  std::chrono::minutes make_timeout{60};
};

bool derived(const BuildRequest& r) { return r.arm != "control" || !r.patches.empty() || !r.commit.empty(); }

std::string display_path(const fs::path& path, const fs::path& repo_dir) {
  if (!repo_dir.empty()) {
    auto rel = fs::weakly_canonical(path).lexically_relative(fs::weakly_canonical(repo_dir));
    if (!rel.empty() && *rel.begin() != "..") return rel.string();
  }
  return fs::absolute(path).lexically_normal().string();
}

// KEY=value pairs, later ones replacing earlier ones with the same name, order kept.
std::vector<std::string> merge_variables(const std::vector<std::string>& base,
                                         const std::vector<std::string>& extra) {
  std::vector<std::string> out;
  auto name_of = [](const std::string& v) { return v.substr(0, v.find('=')); };
  for (auto* list : {&base, &extra})
    for (auto& v : *list) {
      auto name = name_of(v);
      std::erase_if(out, [&](const std::string& o) { return name_of(o) == name; });
      out.push_back(v);
    }
  return out;
}

// LOOK_ONLY (a dry run): nothing is unpacked or written; a source the cache does not hold
// leaves the tree empty, and the build's directory too unless its version is known.
Inputs gather(const BuildRequest& request, const Progress& progress, bool look_only = false) {
  Inputs in;
  in.arm = request.arm;
  static const std::regex arm_name("[A-Za-z0-9_-]{1,32}");
  if (!std::regex_match(in.arm, arm_name))
    throw UserError("arm name `" + in.arm + "` cannot name a kernel release",
                    "use letters, digits, - and _ (at most 32), e.g. control or patched");
  for (auto& v : request.make_variables)
    if (v.find('=') == std::string::npos || v.front() == '=')
      throw UserError("make variable `" + v + "` is not NAME=value", "e.g. KCFLAGS=-O3");

  in.base = request.config.base.empty() ? "tinyconfig" : request.config.base;
  if (!kConfigTargets.count(in.base)) {
    fs::path base = in.base;
    // As the sudo user sees it (sixty-sixth attack: a file in a root-only place was told apart).
    auto a_file = [](const fs::path& p) { return fs::is_regular_file(status_as_invoking_user(p)); };
    if (!a_file(base) && !request.repo_dir.empty() && a_file(request.repo_dir / base)) base = request.repo_dir / base;
    if (!a_file(base))
      throw UserError("config base not found: " + in.base,
                      "use tinyconfig, defconfig, allnoconfig or the path of a .config");
    base = fs::canonical(base);  // its links followed here, where it is checked, and never after
    require_trusted_input(base, "config base");
    in.base = base.string();
    // Read once, never through a link (forty-third attack: a sudo user's base renamed over
    // after it was hashed built another config under the genuine one's key, or a link copied
    // /etc/shadow into the build's .config).
    in.base_text = read_input_file(base, kMaxInputBytes, "config base", Links::refuse);
    in.base_sha256 = sha256_hex(in.base_text);
  }
  for (auto& name : request.config.fragments) {
    auto path = resolve_fragment(name, request.repo_dir);
    require_trusted_input(path, "config fragment");
    auto text = read_input_file(path, kMaxInputBytes, "config fragment");
    in.fragments.push_back({path.filename().string(), path, sha256_hex(text)});
    auto lines = parse_fragment(text, path.filename().string());
    in.requested.insert(in.requested.end(), lines.begin(), lines.end());
  }
  for (auto& name : request.patches) {
    auto path = resolve_patch(name, request.repo_dir);
    require_trusted_input(path, "patch file");
    auto set = parse_patch_file(read_input_file(path, kMaxInputBytes, "patch file"), display_path(path, request.repo_dir));
    for (auto& p : set.patches) in.patches.push_back(std::move(p));
    if (set.cover && !in.cover) in.cover = set.cover;
  }

  // The source last: the checks above fail in milliseconds, hashing the archive takes a second.
  in.cache = fs::absolute(request.cache_root.empty() ? source::default_cache_root()
                                                     : source::check_cache_root(request.cache_root));
  // A tarball's Makefile runs (confined) and a tree is built: neither may be another user's.
  if (!request.source.path.empty() && fs::exists(status_as_invoking_user(request.source.path)))
    require_trusted_input(request.source.path, "kernel source");
  progress.stage(in.arm, "source");
  in.source = look_only ? source::find(request.source, in.cache)
                        : source::prepare(request.source, in.cache,
                                          [&](const std::string& what) { progress.stage(in.arm, what); });
  if (!request.commit.empty()) {
    // The later commit is the source's tree plus their diff, applied before the arm's patches.
    auto c = source::commit_diff(in.source.identity, request.commit, look_only ? fs::path() : in.cache);
    auto shown = "git diff " + in.source.identity.commit.substr(0, 12) + ".." + c.commit.substr(0, 12);
    in.commit = {{"name", request.commit}, {"sha", c.commit}, {"subject", c.subject}, {"diff", c.diff.string()},
                 {"file", c.empty ? "" : shown}};
    if (!c.empty) {
      auto set = parse_patch_file(c.text, shown);
      for (auto& p : set.patches) p.subject = c.commit.substr(0, 12) + " (\"" + c.subject + "\")";
      in.patches.insert(in.patches.begin(), set.patches.begin(), set.patches.end());
    }
  }

  in.toolchain = detect_toolchain(request.make_variables, request.use_ccache);
  std::vector<std::string> defaults = {
      // Pinned, so nothing in the caller's environment (ARCH, KCFLAGS, ...) slips into
      // one arm's build unrecorded.
      "ARCH=x86", "CROSS_COMPILE=", "KCFLAGS=", "KCPPFLAGS=", "KAFLAGS=",
      "KBUILD_BUILD_TIMESTAMP=" + request.kbuild.timestamp,
      "KBUILD_BUILD_USER=" + request.kbuild.user, "KBUILD_BUILD_HOST=" + request.kbuild.host,
      "KBUILD_BUILD_VERSION=" + request.kbuild.version};
  if (!in.toolchain.ccache.empty()) defaults.push_back("HOSTCC=ccache gcc");
  in.localversion = "-ks-" + in.arm;
  in.variables = merge_variables(defaults, request.make_variables);
  if (!in.toolchain.ccache.empty())  // also in front of a CC= the caller chose
    in.variables = merge_variables(in.variables, {"CC=ccache " + in.toolchain.cc});
  in.variables.push_back("LOCALVERSION=" + in.localversion);
  in.make_timeout = request.make_timeout;
  // ccache's own variable, when set, names the cache to use: several kernel caches (a
  // test's, a user's) can then share one ccache, as the same tree compiles the same.
  const char* env_ccache = std::getenv("CCACHE_DIR");
  in.ccache_dir = request.ccache_dir             ? fs::absolute(*request.ccache_dir)
                  : env_ccache && *env_ccache    ? fs::absolute(env_ccache)
                                                 : in.cache / "ccache";
  if (request.use_ccache) in.ccache_dir = source::check_cache_root(in.ccache_dir, "ccache directory");  // linked in
  in.jobs = request.jobs > 0 ? request.jobs
                             : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  json key{{"recipe", kRecipe},
           {"source", in.source.identity.key()},
           {"base", in.base_sha256.empty() ? in.base : "file:" + in.base_sha256},
           {"fragments", json::array()},
           {"patches", json::array()},
           {"compiler", in.toolchain.compiler},
           {"linker", in.toolchain.linker},
           {"make", in.toolchain.make},
           {"ccache", !in.toolchain.ccache.empty()},
           {"make_variables", request.make_variables},
           {"kbuild", {request.kbuild.timestamp, request.kbuild.user, request.kbuild.host,
                       request.kbuild.version}},
           {"localversion", in.localversion}};
  for (auto& f : in.fragments) key["fragments"].push_back({f.name, f.sha256});
  for (auto& p : in.patches) key["patches"].push_back({p.file, p.sha256});
  if (!in.commit.is_null()) key["commit"] = in.commit["sha"];  // also when its tree is the baseline's
  in.key = sha256_hex(key.dump()).substr(0, 20);
  if (!in.source.identity.version.empty())
    in.dir = in.cache / "build" / (in.source.identity.version + in.localversion + "-" + in.key);
  return in;
}

// ---------------------------------------------------------------- running make

struct MakeRun {
  proc::Result result;
  std::vector<std::string> compiled;  // objects compiled (CC/AS lines)
};

// The uid and gid root's make runs as, unless it builds Debian's own source: no account's, so
// no process of the machine shares it (to signal or trace the build), and without root's
// rights: the host's sysctls, root's sockets and files, device nodes and set-ID programs are
// beyond it, as they are for any user (thirty-second attack: uid 0 set kernel.core_pattern).
constexpr uid_t kBuildUid = 2147483646;
constexpr gid_t kBuildGid = 2147483646;
// What make may print (a full build of a large config prints a few MB), the size of its
// /tmp (in memory; the compiler's temporaries, -pipe aside) and its processes (a -j64 build
// runs a few hundred).
constexpr size_t kMaxMakeOutput = size_t(64) << 20;
constexpr size_t kMaxTmpBytes = size_t(1) << 30;
constexpr int kMaxBuildProcesses = 4096;

// How make sees the build: the command in front of make's (none but for root) and the paths
// of the tree, the objects and ccache's directory in its view.
struct Confinement {
  std::vector<std::string> prefix;
  fs::path tree, objdir, ccache_dir, base;  // BASE: ccache's CCACHE_BASEDIR
  bool unprivileged = false;                // make runs as kBuildUid
};

// For root, make runs the Makefiles and scripts of whatever patch, archive or commit it was
// given, so it gets (bubblewrap) a read-only view of the machine with only the objects
// writable, and ccache's directory when WRITES_CCACHE; a private /tmp and /run, its own
// session (no terminal to push keystrokes into), no network, no capabilities; and, unless it
// WRITES_CCACHE (Debian's own source, unpatched), the rights of kBuildUid alone. The tree,
// objects and ccache are bound under /run/ks, where that uid reaches them whatever the
// directories above them allow (the same paths for every build: ccache's entries match).
// Others build with their own rights.
Confinement confine(const Inputs& in, const fs::path& tree, const fs::path& objdir, bool uses_ccache, bool writes_ccache) {
  fs::create_directories(objdir);
  // bwrap binds where a link leads (twenty-seventh attack: a patch that made ks-out a link to
  // a directory of root's made that directory writable to the patch's Makefile).
  if (fs::is_symlink(objdir)) throw SystemError("confine make", objdir.string() + " is a symbolic link");
  if (::geteuid() != 0) return {{}, tree, objdir, in.ccache_dir, in.cache};
  auto bwrap = proc::find_program("bwrap");
  if (!bwrap)
    throw UserError("building a kernel as root runs the patch's own Makefiles, and ksandwich confines them with "
                        "bubblewrap (bwrap), which is not installed",
                    "apt-get install bubblewrap (tools/setup.sh installs it), or build as a user");
  const auto source = fs::canonical(tree);
  Confinement c{{}, "/run/ks/linux", "/run/ks/out", "/run/ks/ccache", "/run/ks", !writes_ccache};
  if (objdir.parent_path() == tree) c.objdir = c.tree / objdir.filename();  // Kbuild's relative paths
  // A fresh /proc's sys/ is the host's sysctls: read-only as well (bwrap leaves it writable
  // when it thinks it is not).
  c.prefix = {bwrap->string(), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
              "--ro-bind", "/proc/sys", "/proc/sys", "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
              "--perms", "01777", "--size", std::to_string(kMaxTmpBytes), "--tmpfs", "/tmp", "--tmpfs", "/run", "--perms", "0755", "--dir", "/run/ks", "--ro-bind", source.string(), c.tree.string(),
              "--bind", objdir.string(), c.objdir.string()};
  if (uses_ccache) {
    const auto cache = fs::canonical(source::ensure_dir(in.ccache_dir));
    // A writable ccache directory above the tree would make the tree writable again.
    if (starts_with(source.string() + "/", cache.string() == "/" ? "/" : cache.string() + "/"))
      throw UserError("ccache's directory " + in.ccache_dir.string() + " holds the kernel tree " + tree.string(),
                      "point CCACHE_DIR (or --ccache-dir) at a directory of its own, e.g. /var/cache/ksandwich/ccache");
    // The build uid reads it (the entries are made 0644), no one else but root. It is root's
    // (check_cache_root: a sudo user's own ccache is refused, never made root's).
    if (::chown(cache.c_str(), 0, kBuildGid) != 0 || ::chmod(cache.c_str(), 0750) != 0)
      throw SystemError("open " + cache.string() + " to the build", std::strerror(errno));
    c.prefix.insert(c.prefix.end(), {writes_ccache ? "--bind" : "--ro-bind", cache.string(), c.ccache_dir.string()});
  }
  // Every namespace but the user's: in one of its own uid 0 alone would exist, and no setuid.
  c.prefix.insert(c.prefix.end(), {"--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                                   "--new-session", "--die-with-parent", "--cap-drop", "ALL"});
  if (c.unprivileged) {
    auto setpriv = proc::find_program("setpriv"), prlimit = proc::find_program("prlimit");
    if (!setpriv || !prlimit)
      throw UserError("setpriv and prlimit, which make a build run as no account, are not installed", "apt-get install util-linux");
    // A process count of its own (thirty-fourth attack: a fork bomb could take every pid).
    c.prefix.insert(c.prefix.end(), {"--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--", prlimit->string(),
                                     "--nproc=" + std::to_string(kMaxBuildProcesses), "--", setpriv->string(),
                                     "--reuid=" + std::to_string(kBuildUid), "--regid=" + std::to_string(kBuildGid),
                                     "--clear-groups", "--inh-caps=-all"});
    open_tree_for_reading(tree);
    give_tree(objdir, kBuildUid, kBuildGid);
  }
  c.prefix.push_back("--");
  return c;
}

// make -C TREE O=OBJDIR ..., its output (stdout and stderr) appended to LOG; the
// terminal gets progress ticks, not make's lines: files compiled, and with ESTIMATE (an
// earlier build of the same kind) how many of how many and the time left at the rate so far.
MakeRun run_make(const Inputs& in, const fs::path& tree, const fs::path& objdir,
                 const std::vector<std::string>& targets, const fs::path& log,
                 const Progress& progress, const std::optional<BuildEstimate>& estimate = std::nullopt) {
  // Only the Debian package's own source, unpatched, writes the shared ccache; every other
  // make reads it. An entry it wrote is compiled into later kernels of any source (the same
  // tree compiles the same, wherever from), and a patch's, an archive's or a commit's Makefile
  // is anyone's (thirtieth attack: an archive's Makefile swapped a btrfs file's cached object
  // for another, and the next build of Debian's source linked it in). (Patched arms recompile
  // only what they touch; another source's kernels are cached whole once built.)
  const bool trusted = in.patches.empty() && in.source.identity.kind == "debian" &&
                       in.source.identity.origin == source::kDebianTarball;
  const bool uses_ccache = !in.toolchain.ccache.empty();
  const auto view = confine(in, tree, objdir, uses_ccache, trusted);
  std::vector<std::string> argv = view.prefix;
  argv.insert(argv.end(), {"sh", "-c", "exec \"$0\" \"$@\" 2>&1", "make", "-C", view.tree.string(),
                           "O=" + view.objdir.string(), "-j" + std::to_string(in.jobs)});
  argv.insert(argv.end(), in.variables.begin(), in.variables.end());
  argv.insert(argv.end(), targets.begin(), targets.end());

  MakeRun run;
  std::ofstream out(log, std::ios::app);
  out << "\n$ make " << join(targets, " ") << "   (" << now_utc_iso8601() << ")\n";
  CompileCounter counter;
  proc::Command cmd = command(argv, in.make_timeout);
  cmd.max_output = kMaxMakeOutput;  // thirty-third attack: `yes` in a Makefile filled memory and the log
  cmd.env = {{"CCACHE_DIR", view.ccache_dir.string()},
             {"CCACHE_BASEDIR", view.base.string()},
             {"CCACHE_NOHASHDIR", "1"},
             {"LC_ALL", "C"}};
  if (!trusted) cmd.env.insert(cmd.env.end(), {{"CCACHE_READONLY", "1"}, {"CCACHE_TEMPDIR", "/tmp"}});
  else cmd.env.insert(cmd.env.end(), {{"CCACHE_UMASK", "022"}});  // the build uid reads the entries
  auto tick = [&] { progress.tick(build_detail(counter.count(), estimate, progress.stage_seconds())); };
  cmd.on_stdout = [&](std::string_view chunk) {
    out << chunk;
    counter.feed(chunk);
    tick();
  };
  cmd.on_tick = tick;  // the clock moves on while make links in silence
  run.result = proc::run(cmd);
  run.compiled = counter.files();
  if (run.result.ok()) {
    // What make made: no device node, FIFO, socket or set-ID program is kept (twenty-eighth
    // attack: a setuid-root shell, when make ran as root), and root takes back what it lent.
    require_plain_tree(objdir, "the build of arm " + in.arm);
    if (view.unprivileged) give_tree(objdir, 0, 0);
  }
  out << "\n[exit " << run.result.exit_code << (run.result.timed_out ? ", timed out" : "")
      << " after " << Progress::format_duration(run.result.seconds) << "]\n";
  return run;
}

// The last lines of make's output, errors first: what to show when a build fails.
std::string failure_excerpt(const std::string& output) {
  auto lines = split(output, '\n');
  std::vector<std::string> errors;
  for (auto& l : lines)
    if (l.find("error:") != std::string::npos || l.find("Error ") != std::string::npos ||
        l.find("undefined reference") != std::string::npos)
      errors.push_back(l);
  if (errors.size() > 12) errors.erase(errors.begin(), errors.end() - 12);
  if (errors.empty()) {
    size_t from = lines.size() > 15 ? lines.size() - 15 : 0;
    errors.assign(lines.begin() + static_cast<long>(from), lines.end());
  }
  return join(errors, "\n");
}

fs::path keep_failed_log(const Inputs& in, const fs::path& log, const std::string& what) {
  auto logs = source::ensure_dir(in.cache / "logs");  // make's output: what it read, anything
  auto stamp = now_utc_iso8601();
  std::replace(stamp.begin(), stamp.end(), ':', '-');
  auto kept = logs / (in.dir.filename().string() + "-" + what + "-" + stamp + ".log");
  // A new file renamed over the name, never written through it (thirty-ninth attack: a link
  // planted in logs/ had make's log copied over, and chmodded, a file of root's).
  try {
    write_file_atomic(kept, read_head_and_tail(log, kMaxMakeOutput));
  } catch (const std::exception&) {
    return log;
  }
  return kept;
}

// ---------------------------------------------------------------- steps

void copy_tree(const fs::path& from, const fs::path& to, bool hardlink) {
  if (fs::is_symlink(from)) throw SystemError("copy " + from.string(), "it is a symbolic link");
  auto r = proc::run(command({"cp", hardlink ? "-al" : "-a", from.string(), to.string()}, 30min));
  if (!r.ok()) throw SystemError("copy " + from.string(), r.describe());
}

// Whether root may act on NAME, a path a diff names, within the tree: relative, with no ".."
// anywhere (through a link it need not be undone by the name before it).
bool stays_in_tree(const fs::path& name) {
  return !name.empty() && !name.is_absolute() &&
         std::none_of(name.begin(), name.end(), [](auto& c) { return c == ".."; });
}

// Applies every patch in order, each checked with a dry run first, so a failure names
// the file and the hunk. Throws UserError; the caller's temp tree (half-patched or not) is
// discarded.
void apply_patches(const Inputs& in, const fs::path& tree, const fs::path& scratch, const fs::path& log) {
  std::ofstream out(log, std::ios::app);
  for (size_t i = 0; i < in.patches.size(); ++i) {
    const auto& p = in.patches[i];
    auto file = scratch / ("patch-" + std::to_string(i + 1) + ".diff");
    write_file(file, p.text);
    std::vector<std::string> argv = {"patch", "-p1", "--batch", "--forward", "--fuzz=0",
                                     "--no-backup-if-mismatch", "-d", tree.string(),
                                     "-i", file.string()};
    auto dry = argv;
    dry.insert(dry.begin() + 1, "--dry-run");
    auto check = proc::run(command(dry, 5min));
    out << "$ patch --dry-run " << p.file << "\n" << check.out << check.err;
    std::string which = p.file;
    if (p.count > 1) which += " (message " + std::to_string(p.index) + " of " +
                              std::to_string(p.count) + ": " + p.subject + ")";
    if (!check.ok())
      throw UserError("patch " + which + " does not apply to " + in.source.identity.version +
                          " (" + in.source.identity.origin + "): " +
                          describe_patch_failure(check.out + check.err),
                      "rebase the patch onto this source, or name the source it was written "
                      "for in the experiment; nothing was built or cached");
    auto applied = proc::run(command(argv, 5min));
    out << "$ patch " << p.file << "\n" << applied.out << applied.err;
    if (!applied.ok()) throw SystemError("patch " + which, applied.describe());
  }
}

struct NormalizedConfig {
  std::string text;
  size_t checked = 0;  // requested symbols verified
};

// A file make left beneath OBJDIR, as root reads it back: a regular file of at most
// kMaxInputBytes, with no link anywhere on the way (make ran the patch's Makefiles, which
// could leave one pointing anywhere, or at /dev/zero; thirty-sixth attack: `arch` linked to
// a root-only directory made its bzImage the kernel); nullopt when absent.
std::optional<std::string> made_file(const fs::path& objdir, const fs::path& rel) {
  try {
    return read_regular_file_beneath(objdir, rel, kMaxInputBytes);
  } catch (const SystemError& e) {
    throw UserError("the kernel build left " + rel.string() + " unreadable: " + e.what(),
                    "the tree's Makefiles (or a patch's) made it so; a kernel's own make leaves a regular file there");
  }
}

// OBJDIR/.config as make left it; "" when absent and not REQUIRED.
std::string read_config(const fs::path& objdir, bool required = true) {
  auto text = made_file(objdir, ".config");
  if (!text && required) throw SystemError("read " + (objdir / ".config").string(), "make left no .config");
  return text.value_or("");
}

// base -> fragments merged -> olddefconfig -> every requested symbol verified.
NormalizedConfig normalize_config(const Inputs& in, const fs::path& tree, const fs::path& scratch,
                                  const fs::path& log, const Progress& progress) {
  fs::create_directories(scratch);
  auto fail = [&](const MakeRun& r, const std::string& step) {
    throw UserError("config: `make " + step + "` failed in " + tree.string() + ": " +
                        failure_excerpt(r.result.out),
                    "see " + keep_failed_log(in, log, "config").string());
  };
  if (kConfigTargets.count(in.base)) {
    auto r = run_make(in, tree, scratch, {in.base}, log, progress);
    if (!r.result.ok()) fail(r, in.base);
  } else {
    write_file_atomic(scratch / ".config", in.base_text);
  }
  write_file_atomic(scratch / ".config", merge_config(read_config(scratch), in.requested));
  auto r = run_make(in, tree, scratch, {"olddefconfig"}, log, progress);
  if (!r.result.ok()) fail(r, "olddefconfig");

  NormalizedConfig out{read_config(scratch), effective_requests(in.requested).size()};
  auto values = parse_config(out.text);
  auto mismatches = verify_config(in.requested, values);
  if (mismatches.empty()) return out;

  // The tree's Kconfig files as a patch left them: regular files of a bounded size, beneath
  // the tree with no link on the way (a `source "/dev/zero"` or a FIFO is not read; nor, in
  // the thirty-seventh attack, a root-only file or /proc through a directory link), and all
  // of them together bounded: one file hard-linked under 10,000 names is 40 GB to parse.
  size_t total = 0;
  auto index = scan_kconfig([&](const std::string& rel) -> std::optional<std::string> {
    proc::throw_if_interrupted();
    if (total > kMaxKconfigTotalBytes) return std::nullopt;
    try {
      auto text = read_regular_file_beneath(tree, rel, kMaxKconfigBytes);
      total += text ? text->size() : 0;
      return text;
    } catch (const SystemError&) {
      return std::nullopt;
    }
  });
  std::string what = "config: " + std::to_string(mismatches.size()) +
                     " symbol(s) from the fragments did not come out as asked (Kconfig "
                     "drops a symbol whose dependencies are not met):";
  for (auto& m : mismatches) {
    m.why = explain(index, values, m.requested.symbol, m.requested.value, m.actual);
    what += "\n  " + format_assignment(m.requested.symbol, m.requested.value) + " (" +
            m.requested.origin + ") came out " + m.actual + ": " + m.why;
  }
  auto kept = source::ensure_dir(in.cache / "logs") / (in.dir.filename().string() + "-rejected.config");
  write_file_atomic(kept, out.text);  // never through a name someone planted in logs/
  throw UserError(what, "add what they depend on to the fragment, or drop them; the config "
                        "Kconfig produced is in " + kept.string());
}

std::string unquote(const std::string& s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  return s;
}

json make_identity(const Inputs& in, const BuildRequest& request, const NormalizedConfig& config,
                   const std::string& release) {
  json fragments = json::array();
  for (auto& f : in.fragments)
    fragments.push_back({{"name", f.name}, {"path", f.path.string()}, {"sha256", f.sha256}});
  json patches = json::array();
  for (auto& p : in.patches) patches.push_back(to_json(p));
  json id{{"arm", in.arm},
          {"key", in.key},
          {"source", source::to_json(in.source.identity)},
          {"config", {{"base", in.base},
                      {"base_sha256", in.base_sha256},
                      {"fragments", fragments},
                      {"sha256", sha256_hex(config.text)},
                      {"symbols_checked", config.checked}}},
          {"toolchain", {{"compiler", in.toolchain.compiler},
                         {"linker", in.toolchain.linker},
                         {"make", in.toolchain.make},
                         {"ccache", in.toolchain.ccache},
                         {"make_variables", request.make_variables}}},
          {"kbuild", {{"timestamp", request.kbuild.timestamp},
                      {"user", request.kbuild.user},
                      {"host", request.kbuild.host},
                      {"version", request.kbuild.version},
                      {"localversion", in.localversion}}},
          {"kernel_release", release},
          {"patches", patches}};
  if (in.cover) id["cover_letter"] = to_json(*in.cover);
  if (!in.commit.is_null()) id["commit"] = in.commit;
  return id;
}

BuiltKernel load_cached(const fs::path& dir, Clock::time_point started) {
  BuiltKernel k;
  // What was built here, and the very kernel built: root's own files, the kernel's hash as
  // recorded (thirty-eighth attack: another user's kernel in a build directory was a cache
  // hit, and its bundle named the recorded hash).
  auto text = read_cache_file(dir / "identity.json", kMaxInputBytes);
  k.identity = json::parse(text.value_or(""), nullptr, false);
  const auto recorded = k.identity.is_object() ? k.identity.value("bzimage", json::object()).value("sha256", "") : "";
  if (recorded.empty() || untrusted_on_the_way(dir / "bzImage", PathRole::kTrustedFile) ||
      sha256_file(dir / "bzImage") != recorded)
    throw UserError("the build cache's " + dir.string() + " is not a kernel ksandwich built there, or was changed since",
                    "remove it (rm -r " + shell_quote(dir.string()) + ") and build again");
  k.bzimage = dir / "bzImage";
  k.build_dir = dir;
  k.kernel_release = k.identity.value("kernel_release", "");
  k.cache_hit = true;
  k.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return k;
}

bool complete(const fs::path& dir) {
  return fs::exists(dir / "identity.json") && fs::exists(dir / "bzImage");
}

// Every build happens at one path, <cache>/build/.work, one at a time: the kernel's
// objtool is built with absolute paths and every object depends on it, so a control
// build copied to another path would rebuild everything. Built there, then renamed
// into place; a patched arm copies the control's objects back to the same path.
constexpr const char* kWorkspace = ".work";

class WorkspaceLock {
 public:
  explicit WorkspaceLock(const fs::path& file) {
    fd_ = open_private_file(file, O_RDWR);  // no one else can hold it
  }
  bool try_lock() { return flock(fd_, LOCK_EX | LOCK_NB) == 0; }
  void lock() {
    while (flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) throw SystemError("flock", errno);
      proc::throw_if_interrupted();
    }
  }
  ~WorkspaceLock() {
    if (fd_ >= 0) close(fd_);  // releases the lock
  }
  WorkspaceLock(const WorkspaceLock&) = delete;
  WorkspaceLock& operator=(const WorkspaceLock&) = delete;

 private:
  int fd_ = -1;
};

// The kind of the build of IN (for estimate_build); CONFIG_SHA256 empty when not yet known.
BuildKind kind_of(const Inputs& in, bool incremental, std::string config_sha256) {
  BuildKind kind{in.source.identity.version, incremental, std::move(config_sha256), in.base, {}, {}};
  for (auto& f : in.fragments) kind.fragment_sha256s.push_back(f.sha256);
  for (auto& p : in.patches) kind.patch_sha256s.push_back(p.sha256);
  return kind;
}

std::unique_ptr<WorkspaceLock> lock_workspace(const fs::path& builds, const std::string& arm,
                                              const Progress& progress) {
  auto lock = std::make_unique<WorkspaceLock>(builds / ".lock");
  if (!lock->try_lock()) {
    progress.note("[" + arm + "] waiting for another kernel build in " + builds.string());
    lock->lock();
  }
  return lock;
}

// Applies the patches to copies of just the files they touch, in SCRATCH: a failure is
// known in seconds, before anything is built. The files come from the unpacked tree, else
// from a git source's commit.
void check_patches_apply(const Inputs& in, const fs::path& scratch) {
  auto tree = scratch / "linux";
  fs::create_directories(tree);
  for (auto& p : in.patches)
    for (auto& f : p.files) {
      // A name that could leave the tree (a .. anywhere: through a link it need not be undone
      // by the name before it; /) is never copied: patch(1) refuses it anyway, and a hostile
      // patch would have a file outside the tree copied, or the copy written outside scratch.
      if (!stays_in_tree(f)) continue;
      if (fs::exists(tree / f)) continue;
      if (!in.source.tree.empty()) {
        // A file of the tree, never through a link of the archive's (twenty-eighth attack: a
        // link to a 2 GiB file, or /proc, copied into the cache) and bounded.
        std::error_code ec;
        const auto from = in.source.tree / f;
        const auto real = fs::weakly_canonical(from, ec);
        if (ec || real != fs::weakly_canonical(in.source.tree) / f) continue;
        std::optional<std::string> text;
        try {
          text = read_regular_file(from, kMaxInputBytes, Links::refuse);
        } catch (const SystemError&) {
          continue;  // not a regular file: patch(1) says what it makes of it
        }
        if (!text) continue;
        fs::create_directories((tree / f).parent_path());
        write_file(tree / f, *text);
        continue;
      }
      // A file the commit does not hold is one a patch creates.
      auto spec = in.source.identity.commit + ":" + f;
      auto r = proc::run(source::git_command(in.source.identity.origin, {"cat-file", "blob", spec}, 1min));
      if (!r.ok()) continue;
      fs::create_directories((tree / f).parent_path());
      write_file(tree / f, r.out);
    }
  apply_patches(in, tree, scratch, scratch / "check.log");
}

}  // namespace

bool is_config_target(const std::string& base) { return kConfigTargets.count(base) > 0; }

fs::path resolve_fragment(const std::string& name, const fs::path& repo_dir) {
  // A bare name is a shipped fragment's before a file in the current directory (thirty-ninth
  // attack: anyone's btrfs-bench.config in a shared directory stood in for build's default).
  std::vector<fs::path> candidates;
  if (!repo_dir.empty()) {
    candidates.push_back(repo_dir / "configs/kernel" / name);
    candidates.push_back(repo_dir / "configs/kernel" / (name + ".config"));
  }
  candidates.insert(name.find('/') == std::string::npos ? candidates.end() : candidates.begin(), name);
  for (auto& c : candidates)  // as the sudo user: no answer about root's places they could not look in
    if (fs::is_regular_file(status_as_invoking_user(c))) return c;
  throw UserError("config fragment not found: " + name,
                  "name a file in configs/kernel/ (e.g. btrfs-bench.config) or give its path");
}

fs::path resolve_patch(const std::string& name, const fs::path& repo_dir) {
  std::vector<fs::path> candidates = {name};
  if (!repo_dir.empty()) {
    candidates.push_back(repo_dir / "kernel-patches" / name);
    candidates.push_back(repo_dir / name);
  }
  for (auto& c : candidates)
    if (fs::is_regular_file(status_as_invoking_user(c))) return c;
  throw UserError("patch file not found: " + name,
                  "give the path of a diff or a saved mailbox, or a file name in "
                  "kernel-patches/");
}

// An experiment's relative file names resolve to the experiment file's directory first,
// then to the shipped folder; never to the directory the command was started in.
fs::path resolve_experiment_file(const std::string& name, const fs::path& experiment_dir,
                                 const std::vector<fs::path>& shipped) {
  if (fs::path(name).is_absolute()) return name;
  std::vector<fs::path> candidates;
  if (!experiment_dir.empty()) candidates.push_back(fs::absolute(experiment_dir) / name);
  for (auto& dir : shipped)
    if (!dir.empty()) candidates.push_back(fs::absolute(dir) / name);
  for (auto& c : candidates)  // as the sudo user: no answer about root's places they could not look in
    if (fs::is_regular_file(status_as_invoking_user(c))) return c.lexically_normal();
  return candidates.empty() ? fs::path(name) : candidates.front().lexically_normal();
}

BuildRequest request_for_arm(const experiment::Experiment& e, const std::string& arm,
                             const fs::path& repo_dir, const fs::path& experiment_dir) {
  BuildRequest r;
  r.arm = arm;
  r.source = e.source;
  r.config = e.config;
  r.repo_dir = repo_dir;
  if (!r.source.path.empty()) r.source.path = resolve_experiment_file(r.source.path, experiment_dir, {}).string();
  if (!r.config.base.empty() && !kConfigTargets.count(r.config.base))
    r.config.base = resolve_experiment_file(r.config.base, experiment_dir, {}).string();
  auto shipped = [&](const char* folder) {
    return repo_dir.empty() ? fs::path() : repo_dir / folder;
  };
  for (auto& name : r.config.fragments) {
    auto found = resolve_experiment_file(name, experiment_dir, {shipped("configs/kernel")});
    // A bare name such as "btrfs-bench" may leave out ".config".
    if (!fs::exists(status_as_invoking_user(found)) && !repo_dir.empty() && fs::path(name).is_relative() &&
        fs::is_regular_file(shipped("configs/kernel") / (name + ".config")))
      found = shipped("configs/kernel") / (name + ".config");
    name = found.string();
  }
  r.commit = e.arms.at(arm).commit;
  for (auto& name : e.arms.at(arm).patches)
    r.patches.push_back(resolve_experiment_file(name, experiment_dir, {shipped("kernel-patches"), repo_dir}).string());
  return r;
}

nlohmann::json absolute_experiment(const experiment::Experiment& e, const fs::path& experiment_dir,
                                   const fs::path& repo_dir) {
  auto r = request_for_arm(e, "control", repo_dir, experiment_dir);
  nlohmann::json out = e.raw;
  if (out.contains("source") && out["source"].contains("path")) out["source"]["path"] = r.source.path;
  if (out.contains("config")) {
    if (out["config"].contains("base")) out["config"]["base"] = r.config.base;
    if (out["config"].contains("fragments")) out["config"]["fragments"] = r.config.fragments;
  }
  if (out.contains("arms") && out["arms"].contains("control") && out["arms"]["control"].contains("patches"))
    out["arms"]["control"]["patches"] = r.patches;
  return out;
}

std::optional<BuildEstimate> estimate_build(const fs::path& builds, const BuildKind& kind) {
  std::optional<BuildEstimate> best;
  int best_score = -1;
  std::error_code ec;
  for (auto& entry : fs::directory_iterator(builds, ec)) {
    auto text = read_cache_file(entry.path() / "identity.json", kMaxInputBytes);
    json id = text ? json::parse(*text, nullptr, false) : json();
    try {
      const auto& b = id.at("build");
      if (b.value("mode", "") != (kind.incremental ? "incremental" : "full") || !b.at("compiled").is_number_unsigned() ||
          id.at("source").value("version", "") != kind.source_version)
        continue;
      std::vector<std::string> patches, fragments;
      for (auto& p : id.value("patches", json::array())) patches.push_back(p.value("sha256", ""));
      for (auto& f : id.at("config").value("fragments", json::array())) fragments.push_back(f.value("sha256", ""));
      const auto& config = id.at("config");
      int score = config.value("sha256", "") == kind.config_sha256                              ? 2
                  : config.value("base", "") == kind.base && fragments == kind.fragment_sha256s ? 1
                                                                                                : 0;
      if (kind.incremental && (patches != kind.patch_sha256s || score < (kind.config_sha256.empty() ? 1 : 2))) continue;
      if (score > best_score) {
        best_score = score;
        best = BuildEstimate{b["compiled"].get<size_t>(),
                             // Without a config hash, the same base and fragments is all that can be told.
                             entry.path().filename().string() +
                                 (score == 2 || (score == 1 && kind.config_sha256.empty()) ? ""
                                  : score == 1 ? " (another config, same fragments)"
                                               : " (another config)"),
                             b.value("seconds", 0.0)};
      }
    } catch (const json::exception&) {
      // Not a finished build's identity (a work tree, an older shape): it tells nothing.
    }
  }
  return best;
}

ArmLookup look_up(const BuildRequest& request) {
  auto in = gather(request, Progress::silent(), true);
  ArmLookup a;
  a.source_version = in.source.identity.version;
  if (!in.dir.empty() && complete(in.dir)) {
    a.cached = load_cached(in.dir, Clock::now());
    return a;
  }
  a.estimate = estimate_build(in.cache / "build", kind_of(in, derived(request), ""));
  // An arm at a later commit alone needs no check: its only patch is git's own diff
  // between the two commits, which applies (binary changes are refused when it is made),
  // and a long history would mean copying thousands of files.
  if (request.patches.empty()) return a;
  if (in.source.tree.empty() && in.source.identity.kind != "git") {
    a.patches = "its patches are checked once the run has unpacked the source";
    return a;
  }
  if (in.source.identity.version.empty())
    throw UserError(in.source.identity.origin + " at " + in.source.identity.commit.substr(0, 12) +
                        " is not a kernel source: no Makefile with VERSION and PATCHLEVEL at its top",
                    "name a Linux git tree and a commit of it");
  auto scratch = ScopedDir::temporary("ksandwich-check-");
  check_patches_apply(in, scratch.path());
  a.patches = in.patches.size() == 1 ? "its patch applies" : "its patches apply";
  return a;
}

json preflight(const BuildRequest& request, const Progress& progress) {
  auto in = gather(request, progress);
  auto builds = source::ensure_dir(in.cache / "build");
  source::sweep_stale_temporaries(builds);
  ScopedDir tmp(builds / source::temporary_name("preflight-" + in.key));
  auto log = tmp.path() / "preflight.log";
  auto tree = tmp.path() / "linux";
  copy_tree(in.source.tree, tree, true);
  if (!in.patches.empty()) {
    progress.stage(in.arm, "patch");
    apply_patches(in, tree, tmp.path(), log);
  }
  progress.stage(in.arm, "config");
  auto config = normalize_config(in, tree, tmp.path() / "kconfig", log, progress);
  auto local = unquote(value_of(parse_config(config.text), "LOCALVERSION"));
  auto id = make_identity(in, request, config,
                          in.source.identity.version + (local == "n" ? "" : local) +
                              in.localversion);
  id["bzimage"] = {{"path", ""}, {"sha256", ""}, {"bytes", 0}};
  id["build"] = {{"mode", "preflight"}, {"dir", in.dir.string()}};
  progress.note("[" + in.arm + "] preflight ok: config " +
                id["config"]["sha256"].get<std::string>().substr(0, 12) + ", " +
                std::to_string(config.checked) + " requested symbols as asked");
  return id;
}

BuiltKernel build_arm(const BuildRequest& request, const Progress& progress) {
  auto started = Clock::now();
  auto started_at = now_utc_iso8601();
  auto in = gather(request, progress);
  auto cached = [&](const std::string& how) {
    auto k = load_cached(in.dir, started);
    progress.note("[" + in.arm + "] " + how + ": " + k.kernel_release + " (" + in.dir.string() + ")");
    return k;
  };
  if (complete(in.dir)) return cached("cached");
  auto builds = source::ensure_dir(in.cache / "build");
  source::sweep_stale_temporaries(builds);

  // Bad patches fail in seconds, before a control build that may take ten minutes.
  if (!in.patches.empty()) {
    progress.stage(in.arm, "check patches");
    ScopedDir scratch(builds / source::temporary_name("check-" + in.key));
    check_patches_apply(in, scratch.path());
  }
  std::optional<BuiltKernel> control;
  if (derived(request)) {
    BuildRequest base = request;
    base.arm = "control";
    base.patches.clear();
    base.commit.clear();
    control = build_arm(base, progress);
  }

  auto lock = lock_workspace(builds, in.arm, progress);
  // Another process may have built it while this one waited for the lock.
  if (complete(in.dir)) return cached("cached (built meanwhile by another process)");
  auto own_started = Clock::now();  // this arm's clock leaves out the control build above
  ScopedDir work(builds / kWorkspace);
  auto log = work.path() / "build.log";
  auto tree = work.path() / "linux";
  auto objdir = tree / kObjDir;

  progress.stage(in.arm, "copy source");
  copy_tree(in.source.tree, tree, true);  // hard links: patch(1) replaces, never edits in place
  if (!in.patches.empty()) {
    progress.stage(in.arm, "patch");
    apply_patches(in, tree, work.path(), log);
  }
  // The build's own directory is made here, never found: a link there (twenty-seventh attack:
  // a patch that makes ks-out a link) would send what root writes into it, and what bwrap
  // lets make write, wherever it leads.
  if (fs::symlink_status(objdir).type() != fs::file_type::not_found)
    throw UserError("the source or a patch makes " + objdir.filename().string() + " at the top of the kernel tree, "
                        "the directory ksandwich builds in",
                    "leave " + objdir.filename().string() + " out of the patches and the source; nothing was built");
  if (control) {
    progress.stage(in.arm, "copy control objects");
    copy_tree(control->build_dir / "linux" / kObjDir, objdir, false);
    // The copied objects are newer than the patched sources' original times; make the
    // patched files newer than every object so Kbuild rebuilds exactly what they touch. The
    // names are the diffs' own (patch(1)'s output can be made to name any file), reached with
    // no link on the way (thirty-third attack: a patch made a directory a link and named a
    // file beyond it), and a file still a hard link into the source cache (named by a diff
    // but not rewritten) keeps the cache's time. A file the patches delete has no time to set.
    for (auto& p : in.patches)
      for (auto& f : p.files) {
        const int fd = open_path_beneath(tree, f);
        struct stat st {};
        if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1)
          ::utimensat(AT_FDCWD, ("/proc/self/fd/" + std::to_string(fd)).c_str(), nullptr, 0);
        if (fd >= 0) ::close(fd);
      }
  } else {
    fs::create_directory(objdir);
  }

  progress.stage(in.arm, "config");
  auto config = normalize_config(in, tree, work.path() / "kconfig", log, progress);
  fs::remove_all(work.path() / "kconfig");
  // Rewrite .config only when it changed: a newer .config makes Kbuild resync everything.
  if (read_config(objdir, false) != config.text) write_file_atomic(objdir / ".config", config.text);

  auto estimate = estimate_build(builds, kind_of(in, control.has_value(), sha256_hex(config.text)));
  if (estimate)
    progress.note("[" + in.arm + "] expecting about " + std::to_string(estimate->compiled) +
                  " files to compile, as many as " + estimate->from + " did");
  progress.stage(in.arm, control ? "build (incremental)" : "build");
  auto make = run_make(in, tree, objdir, {"bzImage"}, log, progress, estimate);
  if (!make.result.ok()) {
    auto kept = keep_failed_log(in, log, "failed");
    std::string how = make.result.timed_out    ? "timed out"
                      : make.result.overflowed ? "printed more than " + std::to_string(kMaxMakeOutput >> 20) + " MiB and was stopped"
                                               : "exited " + std::to_string(make.result.exit_code);
    throw UserError("kernel build failed for arm " + in.arm + " (make " + how + " after " +
                        Progress::format_duration(make.result.seconds) + "):\n" +
                        failure_excerpt(make.result.out),
                    std::string(make.result.timed_out
                                    ? "the machine is slow or busy: allow more time "
                                      "(ksandwich build --make-timeout, then run again); "
                                    : "") +
                        "full log: " + kept.string() + "; nothing was cached");
  }

  auto release = trim(made_file(objdir, "include/config/kernel.release").value_or(""));
  auto bzimage = made_file(objdir, "arch/x86/boot/bzImage");
  if (release.empty() || !bzimage)
    throw SystemError("kernel build for arm " + in.arm, "make succeeded but left no kernel.release or bzImage");
  if (!source::is_kernel_release(release))  // printed, kept in identities and bundles
    throw UserError("kernel build for arm " + in.arm + " made the release \"" + one_line(release.substr(0, 80)) +
                        "\", which is not a kernel release",
                    "a release is at most 64 letters, digits and ._+-~: see the tree's Makefile and "
                    "scripts/setlocalversion");
  write_file(work.path() / "bzImage", *bzimage);
  write_file(work.path() / "config", config.text);
  double seconds = std::chrono::duration<double>(Clock::now() - own_started).count();

  auto id = make_identity(in, request, config, release);
  id["bzimage"] = {{"path", (in.dir / "bzImage").string()},
                   {"sha256", sha256_file(work.path() / "bzImage")},
                   {"bytes", fs::file_size(work.path() / "bzImage")}};
  json compiled_files = json::array();
  for (size_t i = 0; i < make.compiled.size() && i < 200; ++i)
    compiled_files.push_back(make.compiled[i]);
  id["build"] = {{"mode", control ? "incremental" : "full"},
                 {"reused_from", control ? control->build_dir.string() : ""},
                 {"seconds", seconds},
                 {"make_seconds", make.result.seconds},
                 {"compiled", make.compiled.size()},
                 {"compiled_files", compiled_files},
                 {"jobs", in.jobs},
                 {"started_at", started_at},
                 {"finished_at", now_utc_iso8601()},
                 {"dir", in.dir.string()},
                 {"log", (in.dir / "build.log").string()}};
  write_file_atomic(work.path() / "identity.json", id.dump(2) + "\n");  // last: marks complete

  // Under the lock nobody else finishes this key meanwhile; a leftover without
  // identity.json (someone deleted it) is not a build and is replaced.
  if (fs::exists(in.dir)) fs::remove_all(in.dir);
  fs::rename(work.path(), in.dir);
  work.release();

  BuiltKernel k = load_cached(in.dir, started);
  k.cache_hit = false;
  progress.note("[" + in.arm + "] built " + k.kernel_release + " in " +
                Progress::format_duration(seconds) + " (" + id["build"]["mode"].get<std::string>() +
                ", " + std::to_string(make.compiled.size()) + " files compiled)");
  return k;
}

}  // namespace ks::kernel

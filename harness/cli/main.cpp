// ksandwich: does this kernel patch make this filesystem operation faster or slower?
#include <new>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <system_error>
#include <vector>

#include "cli/commands.hpp"
#include "proc/runner.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/ownership.hpp"

namespace {

namespace fs = std::filesystem;

fs::path self_dir() {
  std::error_code ec;
  auto exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : exe.parent_path();
}

// The data directory holds what the commands read at run time (KSANDWICH_DATA_DIRS, set in
// the top CMakeLists.txt: configs/, kernel-patches/, results-schema/, workloads/fio).
bool holds_data(const fs::path& dir) {
  if (dir.empty()) return false;
  for (auto& sub : ks::split(KSANDWICH_DATA_DIRS, ':'))
    if (!fs::is_directory(dir / sub)) return false;
  return true;
}

// KSANDWICH_HOME when set; else <bin>/../share/ksandwich next to an installed binary; else,
// run from its build tree (build/bin), the source tree it was built from. Empty if none.
fs::path find_data_dir() {
  if (const char* home = getenv("KSANDWICH_HOME")) return home;
  auto bin = self_dir();
  auto installed = (bin / KSANDWICH_DATA_FROM_BIN).lexically_normal();
  if (holds_data(installed)) return installed;
  std::error_code ec;
  if (fs::equivalent(bin, KSANDWICH_BUILD_BIN_DIR, ec) && holds_data(KSANDWICH_SOURCE_DIR))
    return KSANDWICH_SOURCE_DIR;
  return {};
}

// The subcommands that read the data directory refuse to start without it (exit 2).
void require_data_dir(const CLI::App& app, const fs::path& data_dir) {
  bool needed = false;
  for (auto name : {"run", "calibrate", "nightly", "build", "series", "submit"}) needed = needed || app.got_subcommand(name);
  if (!needed || holds_data(data_dir)) return;
  auto dirs = ks::join(ks::split(KSANDWICH_DATA_DIRS, ':'), ", ");
  if (getenv("KSANDWICH_HOME"))
    throw ks::UserError("KSANDWICH_HOME=" + data_dir.string() + " does not hold ksandwich's data (" + dirs + ")",
                        "point KSANDWICH_HOME at a ksandwich source tree or <prefix>/share/ksandwich, or unset it");
  auto installed = (self_dir() / KSANDWICH_DATA_FROM_BIN).lexically_normal();
  throw ks::UserError("ksandwich's data (" + dirs + ") is not installed next to this binary: looked in " +
                          installed.string(),
                      "install with `cmake --install build` or the .deb (cpack -G DEB), run build/bin/ksandwich "
                      "from its build tree, or set KSANDWICH_HOME to a ksandwich source tree");
}

// Edit distance (insertions, deletions, substitutions, adjacent swaps) of two short words.
size_t distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The first word is not an option and names no subcommand: say so, with the nearest names.
void check_subcommand_name(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return;
  const std::string word = argv[1];
  std::vector<std::string> names, near;
  for (auto* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  if (std::find(names.begin(), names.end(), word) != names.end()) return;
  if (word.size() <= 64)
    for (auto& name : names)
      if (distance(word, name) <= std::max<size_t>(1, name.size() / 3) || (word.size() >= 3 && ks::starts_with(name, word)))
        near.push_back(name);
  throw ks::UserError("'" + ks::one_line(word.substr(0, 64)) + "' is not a ksandwich command",
                      near.empty() ? "the commands are: " + ks::join(names, ", ") + " (ksandwich --help says more)"
                                   : "did you mean " + ks::join(near, " or ") + "? (ksandwich --help lists them all)");
}

// For root, what KSANDWICH_HOME and KSANDWICH_AGENT name is read and run as root's own (the
// shipped experiments, patches and fio jobs; the agent that runs the workloads): no one else
// may change it or a directory on the way (util's untrusted_on_the_way).
void require_trusted_overrides(const ks::cli::Context& context) {
  auto check = [](const char* name, const fs::path& path, ks::PathRole role) {
    if (!getenv(name)) return;
    if (auto why = ks::untrusted_on_the_way(path, role))
      throw ks::UserError(std::string(name) + "=" + path.string() + ": " + *why + ", and root runs what it holds",
                          std::string("unset ") + name + ", or point it at a copy only you (or root) can change");
  };
  check("KSANDWICH_HOME", context.repo_dir, ks::PathRole::kTrustedDirectory);
  check("KSANDWICH_AGENT", context.agent, ks::PathRole::kTrustedFile);
  // The KVM probe opens it read-write as root (fifty-sixth attack): where it exists, a
  // character device of root's, in a directory no one else can change.
  if (const char* kvm = getenv("KSANDWICH_KVM_DEVICE"); kvm && *kvm && ::geteuid() == 0) {
    const auto device = fs::absolute(kvm);
    auto why = ks::untrusted_on_the_way(device.parent_path(), ks::PathRole::kTrustedDirectory);
    struct stat st{};
    if (!why && ::lstat(device.c_str(), &st) == 0 && (!S_ISCHR(st.st_mode) || st.st_uid != 0))
      why = device.string() + " is not a character device of root's";
    if (why)
      throw ks::UserError("KSANDWICH_KVM_DEVICE=" + std::string(kvm) + ": " + *why + ", and root opens it read-write",
                          "unset KSANDWICH_KVM_DEVICE (the probe then opens /dev/kvm)");
  }
}

// The agent sits next to ksandwich (build/bin/, or wherever both were installed).
fs::path find_agent() {
  if (const char* agent = getenv("KSANDWICH_AGENT")) return agent;
  auto dir = self_dir();
  if (fs::exists(dir / "ksandwich-agent")) return dir / "ksandwich-agent";
  if (auto on_path = ks::proc::find_program("ksandwich-agent")) return *on_path;
  return dir / "ksandwich-agent";
}

// For root, before anything is looked up or started: only the variables ksandwich passes on,
// PATH with only directories no one else can put a program in (util's trusted_environment).
void keep_trusted_environment() {
  if (::geteuid() != 0) return;
  std::vector<std::string> entries;
  for (char** e = environ; *e; ++e) entries.emplace_back(*e);
  const auto kept = ks::trusted_environment(entries);
  ::clearenv();
  for (const auto& [name, value] : kept.variables) ::setenv(name.c_str(), value.c_str(), 1);
  for (const auto& note : kept.notes)
    std::fprintf(stderr, "ksandwich: warning: left out of the environment, %s\n", ks::printable_lines(note).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  keep_trusted_environment();
  CLI::App app{
      "ksandwich: builds control and patched kernels, runs btrfs workloads in a\n"
      "control -> patched -> control sandwich and writes a JSON evidence bundle and a report."};
  // Every command's --help ends with its own exit codes; these are `run`'s.
  app.footer(ks::cli::exit_status_text(ks::cli::verdict_exits()) +
             "\nThe bundle is written in cases 0, 1, 3 and 4. After a SIGKILL, `ksandwich cleanup DIR`\n"
             "undoes what the run left.");
  app.set_version_flag("--version", std::string("ksandwich ") + KSANDWICH_VERSION + " (" +
                                        KSANDWICH_GIT_REVISION + ")");
  app.require_subcommand(1);

  ks::cli::Context context;
  context.command_line.assign(argv, argv + argc);
  context.repo_dir = find_data_dir();
  context.agent = find_agent();
  context.ksandwich = self_dir() / "ksandwich";

  ks::cli::set_run_command(app, context);
  ks::cli::set_doctor_command(app, context);
  ks::cli::set_report_command(app, context);
  ks::cli::set_validate_command(app, context);
  ks::cli::set_analyze_command(app, context);
  ks::cli::set_compare_command(app, context);
  ks::cli::set_calibrate_command(app, context);
  ks::cli::set_history_command(app, context);
  ks::cli::set_nightly_command(app, context);
  ks::cli::set_trend_command(app, context);
  ks::cli::set_junit_command(app, context);
  ks::cli::set_cleanup_command(app, context);
  ks::cli::set_series_command(app, context);
  ks::cli::set_submit_commands(app, context);
  ks::cli::set_bisect_command(app, context);
  ks::cli::set_baremetal_command(app, context);
  set_build_command(app, context);
  app.parse_complete_callback([&app, &context] {
    require_trusted_overrides(context);
    require_data_dir(app, context.repo_dir);
  });

  ks::proc::install_interrupt_handlers();
  // Messages quote the files they are about, which someone else may have written: no control
  // character of theirs reaches the terminal, and a line of theirs is indented, never one
  // that reads as ksandwich's own "ksandwich: hint: ...".
  auto say = [](const char* kind, const std::string& text) {
    std::string lines = ks::printable_lines(text);
    for (size_t at = lines.find('\n'); at != std::string::npos; at = lines.find('\n', at + 1)) lines.insert(at + 1, "  ");
    std::fprintf(stderr, "ksandwich: %s: %s\n", kind, lines.c_str());
  };
  try {
    check_subcommand_name(app, argc, argv);
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 quotes the arguments it did not expect, which may be anyone's file names
    // (seventy-first attack: an ESC sequence in a bundle path reached the terminal).
    std::ostringstream out, err;
    int code = app.exit(e, out, err);
    std::fputs(ks::printable_lines(out.str()).c_str(), stdout);
    std::fputs(ks::printable_lines(err.str()).c_str(), stderr);
    return code == 0 ? 0 : ks::kExitBadInput;
  } catch (const ks::UserError& e) {
    say("error", e.what());
    if (!e.hint().empty()) say("hint", e.hint());
    return ks::kExitBadInput;
  } catch (const ks::Interrupted&) {
    std::fprintf(stderr, "ksandwich: interrupted; everything it set up was removed "
                         "(a measuring run goes on with `ksandwich run --resume DIR`)\n");
    return 130;
  } catch (const ks::SystemError& e) {
    say("error", e.what());
    return ks::kExitBadInput;
  } catch (const std::system_error& e) {
    // The environment refused (std::filesystem: EACCES, ENOSPC, EROFS): not a bug.
    say("error", e.what());
    return ks::kExitBadInput;
  } catch (const std::bad_alloc&) {
    say("error", "out of memory: an input is far larger than anything ksandwich reads");
    return ks::kExitBadInput;
  } catch (const std::exception& e) {
    // Anything else is a path the code did not foresee: still a message, never an abort, and
    // an exit code of its own, so that CI tells a bug from bad input. What it touched was
    // undone by the destructors on the way here.
    say("internal error", e.what());
    std::fprintf(stderr, "ksandwich: hint: this is a bug in ksandwich, not a verdict: please report the "
                         "command line and the message above\n");
    return ks::kExitInternal;
  } catch (...) {
    std::fprintf(stderr, "ksandwich: internal error: an unknown exception ended the command\n");
    std::fprintf(stderr, "ksandwich: hint: this is a bug in ksandwich: please report the command line\n");
    return ks::kExitInternal;
  }
  return context.exit_code;
}

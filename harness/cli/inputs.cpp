// Checks of what the command line names, made before any subcommand touches anything, so
// that a bad path is a clear message and exit 2 instead of an exception from deep inside.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "cli/commands.hpp"
#include "experiment/strict_json.hpp"
#include "pipeline/bundle_file.hpp"
#include "pipeline/host_changes.hpp"
#include "report/report.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/message_id.hpp"
#include "util/ownership.hpp"

namespace ks::cli {

namespace fs = std::filesystem;
using pipeline::kStateDir;

// The longest name of one directory entry Linux file systems take (NAME_MAX).
constexpr size_t kMaxNameBytes = 255;

const CLI::Validator& non_empty_path() {
  static const CLI::Validator v(
      [](const std::string& value) -> std::string {
        return value.empty() ? "is empty: give a path, or leave the option out for its default" : "";
      },
      "PATH");
  return v;
}

const CLI::Validator& mail_address() {
  static const CLI::Validator v(
      [](const std::string& value) -> std::string {
        return report::mailbox_address(value).empty() ? "not a mail address (name@domain or \"Name <name@domain>\")"
                                                      : std::string();
      },
      "ADDRESS");
  return v;
}

const CLI::Validator& message_id() {
  static const CLI::Validator v(
      [](std::string& value) -> std::string {
        auto id = bare_message_id(value);
        if (id.empty()) return "not a Message-ID (<id@host> as in the mail's Message-ID: header, or its lore link)";
        value = id;
        return {};
      },
      "MESSAGE-ID");
  return v;
}

void add_text_or_json(CLI::App* cmd, bool& json, const std::string& what) {
  cmd->add_option_function<std::string>(
         "--format", [&json](const std::string& format) { json = format == "json"; },
         "text | json: " + what + " (default text)")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("--json", json, "the same as --format json");
}

ExitCodes verdict_exits() {
  return {{kExitOk, "every workload decided, no material regression"},
          {kExitRegression, "a material REGRESSION on valid data, even if another workload is INVALID (CI gates on it)"},
          {kExitPointFailed, "no regression shown and some workload INVALID (a failed point, an unexpected result, "
                             "kernel health, a direct hit)"},
          {kExitInconclusive, "no regression shown and some workload INCONCLUSIVE"}};
}

std::string exit_status_text(const ExitCodes& own) {
  ExitCodes all = own;
  for (auto& shared : ExitCodes{{kExitBadInput, "bad input or environment: a message says what and what to do; nothing touched"},
                                {kExitInternal, "an internal error: a bug in ksandwich, please report it"},
                                {130, "interrupted (SIGINT, SIGTERM, SIGHUP): what it had set up is undone"}})
    if (std::none_of(own.begin(), own.end(), [&](auto& o) { return o.first == shared.first; })) all.push_back(shared);
  std::stable_sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::string text = "Exit status:";
  for (auto& [code, meaning] : all) text += fmt::format("\n  {:>3}  {}", code, meaning);
  return text;
}

void set_exit_status(CLI::App* cmd, const ExitCodes& own) { cmd->footer(exit_status_text(own)); }

const CLI::Validator& material_pct() {
  static const CLI::Validator v(
      [](const std::string& text) -> std::string {
        double value = std::strtod(text.c_str(), nullptr);
        return std::isfinite(value) && value > 0 && value < 100 ? ""
                                                                : "must be a percentage above 0 and below 100, e.g. 1";
      },
      "PCT");
  return v;
}

namespace {

// Where an output may go: not under /proc, /sys or /dev (kernel objects), nor the state
// directory (the journal key and the machine lock); and for root, nowhere someone else could
// change (util's untrusted_on_the_way: whoever can plant a link on the way decides where root
// writes). REAL is the output's resolved path; GIVEN how the user wrote it; ROLE what it is.
void check_output_place(const fs::path& real, const fs::path& given, const std::string& option,
                        const std::string& hint, PathRole role) {
  for (const char* pseudo : {"/proc", "/sys", "/dev"}) {
    auto p = real.string();
    if (p == pseudo || starts_with(p, std::string(pseudo) + "/"))
      throw UserError(option + " " + given.string() + " is under " + pseudo +
                          ", which holds kernel objects, not files",
                      hint);
  }
  if (real == kStateDir || starts_with(real.string(), kStateDir.string() + "/"))
    throw UserError(option + " " + given.string() + " is under " + kStateDir.string() +
                        ", where ksandwich keeps its journal key and machine lock",
                    hint);
  // What is written through GIVEN is what REAL names: the nearest existing place of each is one
  // file (fifty-second attack: /proc/PID/root, a link the user owns, led root's write into a
  // mount namespace of theirs, where the checked name was bound over a directory of root's).
  auto nearest = [](fs::path p) {
    std::error_code ec;
    while (!fs::exists(p, ec) && p.has_relative_path()) p = p.parent_path();
    return p;
  };
  struct stat named{}, checked{};
  if (::stat(nearest(fs::absolute(given)).c_str(), &named) != 0 || ::stat(nearest(real).c_str(), &checked) != 0 ||
      named.st_dev != checked.st_dev || named.st_ino != checked.st_ino)
    throw UserError(option + " " + given.string() + " leads somewhere other than " + real.string() +
                        " (through /proc or a mount of another namespace)",
                    hint);
  // Under sudo, only where the invoking user could write themselves: the directory it is made
  // in (the nearest that exists) and the file it replaces (forty-sixth attack: `analyze --out`
  // replaced a root-only file in a root-only directory); or in a directory root made for them
  // before (a run to resume, a bisection to continue, a submission to gather: forty-eighth
  // attack), which only the mark create_output_directory sets tells from any other of root's
  // (forty-ninth attack: every directory of root's in a place of theirs counted as theirs).
  // Asked before the walk below, whose messages would tell them what lies where only root
  // looks (fifty-second attack).
  {
    AsInvokingUser as;
    std::error_code ec;
    const auto dir = nearest(fs::is_directory(real, ec) ? real : real.parent_path());  // as the user sees it
    if (!as.who().empty() &&
        (!(as.may(dir, W_OK | X_OK) || made_for_invoking_user(dir)) || (fs::is_regular_file(real, ec) && !as.may(real, W_OK))))
      throw UserError(option + " " + given.string() + ": " + as.who() + ", cannot write there, and root writes for them only where they could",
                      "name a place of yours, e.g. " + option + " results/my-run");
  }
  if (auto why = untrusted_on_the_way(given, role))
    throw UserError(option + " " + given.string() + ": " + *why,
                    "name a place only you (or root) can change, e.g. " + option +
                        " results/my-run (in a shared directory such as /tmp, make it first as root: mkdir)");
}

fs::path resolved(const fs::path& path, const std::string& option, const std::string& hint) {
  std::error_code ec;
  auto real = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) throw UserError(option + " " + path.string() + " cannot be resolved: " + ec.message(), hint);
  return real;
}

}  // namespace

void check_output_dir(const fs::path& dir, const std::string& option) {
  const std::string hint = "name a new directory (or an empty one) on a normal filesystem, e.g. " +
                           option + " results/my-run";
  if (dir.empty()) throw UserError(option + " is empty", hint);
  // Before anything is made: a default run directory named after a long experiment file
  // failed half made, and left results/ behind (forty-first attack).
  for (auto& part : dir)
    if (part.native().size() > kMaxNameBytes)
      throw UserError(option + " " + one_line(dir.string().substr(0, 300)) + " has a name of " +
                          std::to_string(part.native().size()) + " bytes, more than a file system allows (" +
                          std::to_string(kMaxNameBytes) + ")",
                      "name a shorter directory with " + option + " (the default is the experiment file's name)");
  auto link = status_as_invoking_user(dir, Links::refuse), target = status_as_invoking_user(dir);
  if (fs::is_symlink(link) && !fs::exists(target))
    throw UserError(option + " " + dir.string() + " is a symbolic link to nothing", hint);
  if (fs::exists(target) && !fs::is_directory(target))
    throw UserError(option + " " + dir.string() + " exists and is not a directory", hint);
  check_output_place(resolved(dir, option, hint), dir, option, hint, PathRole::kOwnDirectory);
}

void check_output_file(const fs::path& file, const std::string& option, bool in_place) {
  const std::string hint = "name a file in a directory of yours, e.g. " + option + " results/out";
  // A file is replaced by renaming over its name, so a link there would be replaced, not what
  // it points at, which is all the checks below look at (seventy-first attack: --out
  // /dev/stdout made the system's link a regular file of root's).
  if (!in_place && fs::is_symlink(status_as_invoking_user(file, Links::refuse)))
    throw UserError(option + " " + file.string() + " is a symbolic link, and ksandwich replaces the file it names",
                    "name the file itself, not a link to it");
  check_output_place(resolved(file, option, hint), file, option, hint,
                     in_place ? PathRole::kTrustedFile : PathRole::kReplacedFile);
}

namespace {
void check_json_file(const fs::path& path, const std::string& what, Reader reader, size_t max_bytes) {
  const auto st = status_as_invoking_user(path);
  if (!fs::exists(st)) return;  // the subcommand says it does not exist, in its words
  if (fs::is_directory(st))
    throw UserError(what + " " + path.string() + " is a directory", "name the JSON file itself");
  // Bounded, and never a FIFO or device: /dev/zero would be read forever, a FIFO block.
  auto text = read_input_file(path, max_bytes, what, Links::follow, reader);
  if (pipeline::is_gzip(text)) return;  // pipeline::load_bundle checks it decompressed
  experiment::check_json_text(text, path.string());
}
}  // namespace

void check_json_file(const fs::path& path, const std::string& what) {
  check_json_file(path, what, Reader::invoking_user, kMaxInputBytes);
}

void check_bundle_file(const fs::path& path) {
  check_json_file(path, "bundle", reader_of_anyones_file(path), pipeline::kMaxBundleFile);
}

}  // namespace ks::cli

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "cli/commands.hpp"
#include "experiment/experiment.hpp"
#include "kernel/kbuild.hpp"
#include "kernel/patches.hpp"
#include "pipeline/run.hpp"
#include "source/source.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/ownership.hpp"

namespace ks::cli {

void set_tool(pipeline::RunOptions& o, const Context& context) {
  o.agent = context.agent;
  o.repo_dir = context.repo_dir;
  o.tool = {{"name", "ksandwich"},
            {"version", KSANDWICH_VERSION},
            {"git_revision", KSANDWICH_GIT_REVISION},
            {"command_line", context.command_line}};
}

namespace {

// What EXPERIMENT names: a path as given where it holds a '/' or ends in .json; else a shipped
// experiment, REPO_DIR/configs/experiments/NAME.json; else a file of that name that exists.
// The shipped name first: a file another user left in a shared working directory under the
// name `default` shadowed the README's own command (sixty-fourth attack); ./NAME is the file.
std::filesystem::path experiment_path(const std::string& experiment, const std::filesystem::path& repo_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool a_path = experiment.find('/') != std::string::npos || experiment.ends_with(".json");
  auto shipped = fs::absolute(repo_dir / "configs/experiments").lexically_normal();
  if (!a_path && experiment::is_plain_name(experiment) && fs::is_regular_file(shipped / (experiment + ".json"), ec))
    return shipped / (experiment + ".json");
  if (a_path || fs::exists(status_as_invoking_user(experiment))) return fs::absolute(experiment).lexically_normal();
  std::vector<std::string> names;
  for (auto& entry : fs::directory_iterator(shipped, ec))
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  throw UserError("no experiment file " + experiment + ", and no shipped experiment of that name",
                  names.empty() ? "give the path of an experiment file"
                                : "give the path of an experiment file, or one of the shipped names: " + fmt::format("{}", fmt::join(names, ", ")));
}

// What `run` is told instead of the experiment's own: the patched arm's patches, the kernel
// source, a commit to compare with its parent.
struct Overrides {
  std::vector<std::string> patches;
  std::string message_id;  // picks one series out of the single --patch, a saved thread
  std::string source, commit;
  bool any() const { return !patches.empty() || !source.empty() || !commit.empty(); }
};

// The series MESSAGE_ID names, out of the thread saved in MBOX, as a mailbox of its own in the
// cache (<cache>/threads/<sha256>.mbox, named by its content and written atomically: a
// run's bundle and a later --resume read it there).
std::filesystem::path selected_series(const std::filesystem::path& mbox, const std::string& shown,
                                      const std::string& message_id) {
  require_trusted_input(mbox, "mailbox");
  auto text = kernel::select_series(read_input_file(mbox, kMaxInputBytes, "mailbox"), message_id, shown);
  auto set = kernel::parse_patch_file(text, shown);
  auto path = source::keep_in_cache(source::default_cache_root(), "threads", text, ".mbox");
  fmt::print(stderr, "--message-id: {} of {} ({} patch{}) -> {}\n",
             one_line(set.cover ? set.cover->subject : set.patches.front().subject), shown, set.patches.size(),
             set.patches.size() == 1 ? "" : "es", path.string());
  return path;
}

// The experiment in FILE as O overrides it. Paths are made absolute and commits resolved to
// their ids now: the bundle keeps them, and a resumed run reads them there (a branch may
// have moved by then).
nlohmann::json overridden(const std::filesystem::path& file, const Overrides& o) {
  namespace fs = std::filesystem;
  auto raw = experiment::parse_file(file).raw;
  if (!o.message_id.empty() && o.patches.size() != 1)
    throw UserError("--message-id picks a series out of one saved thread, but " + std::to_string(o.patches.size()) +
                        " --patch files were given",
                    "give the thread as the only --patch");
  if (!o.patches.empty()) {
    auto list = nlohmann::json::array();
    for (auto& p : o.patches) {
      auto path = fs::absolute(p).lexically_normal();
      if (!fs::is_regular_file(status_as_invoking_user(path)))  // as they see it (sixty-fifth attack)
        throw UserError("--patch " + p + " is not a file",
                        "give a patch file: a diff, `git format-patch` output or a saved mailbox of a series");
      list.push_back(o.message_id.empty() ? path.string() : selected_series(path, p, o.message_id).string());
    }
    raw["arms"]["patched"]["patches"] = list;
  }
  if (!o.source.empty()) {
    auto path = fs::absolute(o.source).lexically_normal();
    const auto seen = status_as_invoking_user(path);  // as they see it (sixty-fifth attack)
    if (fs::is_directory(seen) && !fs::exists(status_as_invoking_user(path / ".git")))
      throw UserError("--source " + o.source + " is a directory but not a git tree",
                      "give a git checkout of the kernel, or the source as a tarball (.tar, .tar.gz, .tar.xz)");
    if (fs::is_directory(seen))
      raw["source"] = {{"kind", "git"}, {"path", path.string()}, {"commit", "HEAD"}};
    else if (fs::is_regular_file(seen))
      raw["source"] = {{"kind", "tarball"}, {"path", path.string()}};
    else
      throw UserError("--source " + o.source + " is neither a directory nor a file",
                      "give a kernel git tree or a source tarball (.tar, .tar.gz, .tar.xz)");
  }
  experiment::KernelSource source;
  if (raw.contains("source")) {
    // Beside the experiment, as the run resolves it; never in the current directory.
    source = kernel::request_for_arm(experiment::parse(raw), "control", {}, file.parent_path()).source;
    if (!source.path.empty()) raw["source"]["path"] = source.path;
  }
  if (!o.commit.empty()) {
    if (source.kind != "git")
      throw UserError("--commit " + o.commit + " needs a git source; this experiment's is " + source.kind,
                      "name the kernel git tree with --source DIR");
    // The control arm is the commit's first parent; the patched arm the commit itself.
    source.commit = o.commit;
    raw["arms"]["patched"]["commit"] = source::check_source(source);
    raw["arms"]["patched"].erase("patches");
    source.commit = o.commit + "^";
    try {
      raw["source"]["commit"] = source::check_source(source);
    } catch (const UserError&) {
      throw UserError("--commit " + o.commit + " has no parent in " + source.path + " to compare it with",
                      "name a commit that has a parent (the control arm builds it)");
    }
    return raw;
  }
  if (source.kind == "git") raw["source"]["commit"] = source::check_source(source);
  return raw;
}

}  // namespace

pipeline::RunOptions fresh_run_options(const std::string& experiment, const std::string& out,
                                       const std::filesystem::path& repo_dir, const std::string& kind) {
  namespace fs = std::filesystem;
  pipeline::RunOptions o;
  o.experiment_file = experiment_path(experiment, repo_dir);
  if (auto st = status_as_invoking_user(o.experiment_file); fs::exists(st)) {
    if (!fs::is_regular_file(st))
      throw UserError("experiment " + experiment + " is not a regular file",
                      "pass a JSON file such as configs/experiments/default.json");
    check_json_file(o.experiment_file, "experiment");
  }
  auto stem = o.experiment_file.stem().string();
  auto stamp = now_utc_iso8601();
  std::erase(stamp, ':');
  o.out_dir = fs::absolute(out.empty() ? fs::path("results") / (stem + kind + "-" + stamp)
                                             : fs::path(out))
                  .lexically_normal();
  check_output_dir(o.out_dir, "--out");
  return o;
}

void append_step_summary(const pipeline::RunOptions& o) {
  // GitHub Actions shows the markdown report on the job's page. The file is the caller's:
  // under sudo, appended to as the user who ran it. Not appended, the run's verdict stands.
  if (const char* summary = getenv("GITHUB_STEP_SUMMARY"); summary && *summary && !o.dry_run)
    if (auto report = try_read_file(o.out_dir / "report.md")) try {
        AsInvokingUser as;
        write_file_append(summary, *report + "\n");
      } catch (const SystemError& err) {
        fmt::print(stderr, "warning: the report was not added to $GITHUB_STEP_SUMMARY: {}\n", err.what());
      }
}

void set_run_command(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand("run", "run a whole experiment; writes DIR/bundle.json, "
                                        "DIR/report.txt|md|html and logs (resumable)");
  set_exit_status(cmd, verdict_exits());
  struct Args {
    std::string experiment, out, resume;
    Overrides overrides;
    report::Options reply;
    bool dry_run = false;
    bool after_switch = false;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("experiment", args->experiment,
                  "experiment file, or the name of a shipped one (default, sb-nosec-dio, ...: configs/experiments/NAME.json)");
  cmd->add_option("--out", args->out, "output directory (default results/<name>-<time>)")
      ->check(non_empty_path());
  auto* resume =
      cmd->add_option("--resume", args->resume, "continue an interrupted run in DIR, keeping finished points")
          ->check(non_empty_path());
  auto* patch = cmd->add_option("--patch", args->overrides.patches,
                  "FILE (repeatable, in order): the patched arm's patches instead of the experiment's: a diff, "
                  "`git format-patch` output or a saved mailbox of a series; the experiment's kernel, workloads "
                  "and plan stay")
      ->excludes(resume);
  cmd->add_option("--message-id", args->overrides.message_id,
                  "ID: with one --patch that holds a saved thread (lore's t.mbox, gunzipped), the series this "
                  "Message-ID names: its cover letter's or a patch's, as <id@host>, id@host or its lore link; "
                  "the version it belongs to, without replies or other versions")
      ->needs(patch);
  cmd->add_option("--source", args->overrides.source,
                  "PATH: the kernel source both arms build instead of the experiment's: a git tree (at its HEAD, "
                  "or --commit's parent) or a source tarball")
      ->excludes(resume);
  cmd->add_option("--commit", args->overrides.commit,
                  "REV of the git source (--source's or the experiment's): the patched arm builds REV, the control "
                  "arm its first parent")
      ->excludes(resume)
      ->excludes(patch);
  cmd->add_flag("--after-switch", args->after_switch,
                "with --resume: the run goes on after a bare-metal kernel switch (the boot hook `ksandwich "
                "baremetal resume` passes it); its failed points stay failed")
      ->needs("--resume");
  add_reply_options(cmd, args->reply);
  cmd->add_flag("--dry-run", args->dry_run,
                "print the plan and the commands; touch nothing (but --message-id's series, kept in the cache "
                "by its content)");
  cmd->callback([args, &context] {
    // Every path is made absolute here, once: nothing below depends on the current
    // directory, and no external command is handed a path relative to where it runs.
    namespace fs = std::filesystem;
    pipeline::RunOptions o;
    if (!args->resume.empty()) {
      check_output_dir(args->resume, "--resume");
      check_bundle_file(std::filesystem::path(args->resume) / "bundle.json");
      o.resume = true;
      o.after_switch = args->after_switch;
      o.out_dir = fs::absolute(args->resume).lexically_normal();
      if (!args->experiment.empty()) o.experiment_file = fs::absolute(args->experiment).lexically_normal();
    } else if (args->experiment.empty()) {
      throw UserError("run needs an experiment", "ksandwich run default (configs/experiments/default.json), or --resume DIR");
    } else {
      o = fresh_run_options(args->experiment, args->out, context.repo_dir);
      if (args->overrides.any()) o.experiment = overridden(o.experiment_file, args->overrides);
    }
    o.dry_run = args->dry_run;
    o.reply = args->reply;
    set_tool(o, context);
    context.exit_code = pipeline::run(o);
    append_step_summary(o);
  });
}

}  // namespace ks::cli

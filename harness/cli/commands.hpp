#pragma once
// One file per subcommand; each registers itself on the app and runs through `context`.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "pipeline/run.hpp"

namespace ks::cli {

// What every subcommand may need to know about where it runs from.
struct Context {
  std::vector<std::string> command_line;  // argv as given, for the bundle
  std::filesystem::path repo_dir;         // the data: workloads/fio, configs/, kernel-patches/, results-schema/
                                          // (the source tree, or <prefix>/share/ksandwich installed)
  std::filesystem::path agent;            // ksandwich-agent
  std::filesystem::path ksandwich;        // this binary, for the jobs `submit` hands to Slurm
  int exit_code = 0;                      // set by the subcommand that ran
};

// What every run records about the tool, and where it finds the agent and its data.
void set_tool(pipeline::RunOptions& options, const Context& context);

// The options of a new run of EXPERIMENT into OUT (default results/<name><KIND>-<time>,
// KIND e.g. "-calibration"), paths made absolute and checked; UserError when they cannot be used.
// EXPERIMENT is a file, or the name of a shipped one (REPO_DIR/configs/experiments/NAME.json).
pipeline::RunOptions fresh_run_options(const std::string& experiment, const std::string& out,
                                       const std::filesystem::path& repo_dir, const std::string& kind = "");
// Appends the run's report.md to $GITHUB_STEP_SUMMARY when that is set (GitHub Actions).
void append_step_summary(const pipeline::RunOptions& options);

void set_run_command(CLI::App& app, Context& context);
void set_nightly_command(CLI::App& app, Context& context);
void set_doctor_command(CLI::App& app, Context& context);
void set_report_command(CLI::App& app, Context& context);
void set_validate_command(CLI::App& app, Context& context);
void set_analyze_command(CLI::App& app, Context& context);
void set_compare_command(CLI::App& app, Context& context);
void set_calibrate_command(CLI::App& app, Context& context);
void set_history_command(CLI::App& app, Context& context);
void set_trend_command(CLI::App& app, Context& context);
void set_junit_command(CLI::App& app, Context& context);
void set_cleanup_command(CLI::App& app, Context& context);
void set_series_command(CLI::App& app, Context& context);
void set_submit_commands(CLI::App& app, Context& context);  // submit and gather
void set_bisect_command(CLI::App& app, Context& context);
void set_baremetal_command(CLI::App& app, Context& context);  // install, uninstall, resume, status

// --tested-by and --in-reply-to, shared by `run` and `report` (defined in report.cpp).
void add_reply_options(CLI::App* cmd, report::Options& reply);

// Throws UserError (exit 2) unless DIR can become a run's output directory: not a file,
// not a dangling link, not under /proc, /sys, /dev or ksandwich's state directory, in a
// directory no one else can change (an existing DIR: this user's alone). OPTION names it.
void check_output_dir(const std::filesystem::path& dir, const std::string& option);
// The same for an output file (junit --out, analyze --out): its place, not its kind (the
// writer refuses a device or FIFO and replaces a link instead of following it). IN_PLACE: a
// file written where it is (a SQLite database and its journals beside it), so an existing one
// must be no one else's, and a new one not made where others may write.
void check_output_file(const std::filesystem::path& file, const std::string& option, bool in_place = false);

// For an option that names a path: an empty value is refused (leaving the option out is how
// to get its default), so `--out ""` never quietly means the default.
const CLI::Validator& non_empty_path();
// "name@domain" or "Name <name@domain>", on one line: what the reply's From/To/Cc and the
// trailers' Tested-by/Reported-by take.
const CLI::Validator& mail_address();
// A Message-ID as bare_message_id reads it (<id@host>, id@host, a lore link), made bare.
const CLI::Validator& message_id();

// `--format text|json`, the one convention of every command that prints something a script
// may read (report, compare, trend, validate, analyze take more formats), with `--json` kept
// as its older spelling. Sets JSON when json is chosen; WHAT says what is printed.
void add_text_or_json(CLI::App* cmd, bool& json, const std::string& what);

// What a command's exit status says, shown under its --help (and so in its man page): the
// command's own codes, then those every command shares (2 bad input, 70 a bug, 130 interrupted).
using ExitCodes = std::vector<std::pair<int, std::string>>;
// The codes of a command that ends with the verdicts of runs, like `run` (0, 1, 3, 4).
ExitCodes verdict_exits();
std::string exit_status_text(const ExitCodes& own);
void set_exit_status(CLI::App* cmd, const ExitCodes& own);

// For --material-pct: a percentage above 0 and below 100.
const CLI::Validator& material_pct();

// Throws UserError when the JSON file at PATH (if it exists) holds a NUL byte or nests too
// deep for a recursive reader: checked on the text, before any parser sees it. WHAT names it.
void check_json_file(const std::filesystem::path& path, const std::string& what);
// The same for a bundle, which is read from anyone: as reader_of_anyones_file says.
void check_bundle_file(const std::filesystem::path& path);

}  // namespace ks::cli

// Written by the kernel-build module (harness/cli/build.cpp).
void set_build_command(CLI::App& app, const ks::cli::Context& context);

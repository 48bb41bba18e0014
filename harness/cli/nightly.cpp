#include <fmt/format.h>

#include "cli/commands.hpp"
#include "experiment/backends.hpp"
#include "experiment/experiment.hpp"
#include "history/store.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::cli {

// One night of a nightly job: `run` of the experiment (a confirm sandwich of the baseline
// against the branch tip), then its bundle into the history, so `trend` sees the night.
void set_nightly_command(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand("nightly", "one night: run EXPERIMENT, then add its bundle to the history "
                                            "(exit code as `run`'s)");
  set_exit_status(cmd, verdict_exits());
  struct Args {
    std::string experiment, db, out;
    bool dry_run = false;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("experiment", args->experiment, "experiment file (baseline as control, branch tip as patched)")
      ->required();
  cmd->add_option("--history", args->db, "the history file (created when missing)")->required();
  cmd->add_option("--out", args->out, "output directory (default results/<name>-<time>)")
      ->check(non_empty_path());
  cmd->add_flag("--dry-run", args->dry_run, "print the plan and what would be recorded; touch nothing");
  cmd->callback([args, &context] {
    auto o = fresh_run_options(args->experiment, args->out, context.repo_dir);
    if (std::filesystem::is_regular_file(ks::status_as_invoking_user(o.experiment_file))) {  // else `run` says what is wrong
      auto e = experiment::parse_file(o.experiment_file);
      experiment::require_one_run_per_process(e, "nightly");
      o.experiment = e.raw;  // what `run` measures is what was checked, not the file read again
    }
    o.dry_run = args->dry_run;
    set_tool(o, context);
    check_output_file(args->db, "--history", true);
    if (!args->dry_run) history::Store store(args->db);  // refuse a bad history before hours of running
    int code = pipeline::run(o);
    append_step_summary(o);
    if (args->dry_run) {
      fmt::print("nightly: would add {} to the history {}\n", one_line((o.out_dir / "bundle.json").string()), one_line(args->db));
    } else {
      history::Store store(args->db);
      auto added = history::add_bundle_file(store, o.out_dir / "bundle.json");
      fmt::print("nightly: {} added to {} as run {}\n", one_line((o.out_dir / "bundle.json").string()), one_line(args->db), added.id);
    }
    context.exit_code = code;
  });
}

}  // namespace ks::cli

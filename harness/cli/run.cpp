#include <fmt/format.h>

#include "cli/commands.hpp"
#include "pipeline/run.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::cli {

void set_run_command(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand("run", "run a whole experiment; writes DIR/bundle.json, "
                                        "DIR/report.txt|md|html and logs (resumable)");
  struct Args {
    std::string experiment, out, resume, tested_by;
    bool dry_run = false;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("experiment", args->experiment, "experiment file (configs/experiments/*.json)");
  cmd->add_option("--out", args->out, "output directory (default results/<name>-<time>)");
  cmd->add_option("--resume", args->resume, "continue an interrupted run in DIR, keeping finished points");
  cmd->add_option("--tested-by", args->tested_by, "\"Name <email>\": adds Tested-by: to the reply block of a clean run");
  cmd->add_flag("--dry-run", args->dry_run, "print the plan and the commands; touch nothing");
  cmd->callback([args, &context] {
    // Every path is made absolute here, once: nothing below depends on the current
    // directory, and no external command is handed a path relative to where it runs.
    namespace fs = std::filesystem;
    pipeline::RunOptions o;
    if (!args->resume.empty()) {
      o.resume = true;
      o.out_dir = fs::absolute(args->resume).lexically_normal();
      if (!args->experiment.empty()) o.experiment_file = fs::absolute(args->experiment).lexically_normal();
    } else if (args->experiment.empty()) {
      throw UserError("run needs an experiment file", "ksandwich run configs/experiments/default.json (or --resume DIR)");
    } else {
      o.experiment_file = fs::absolute(args->experiment).lexically_normal();
      auto stem = o.experiment_file.stem().string();
      auto stamp = now_utc_iso8601();
      std::erase(stamp, ':');
      o.out_dir = fs::absolute(args->out.empty() ? fs::path("results") / (stem + "-" + stamp)
                                                 : fs::path(args->out))
                      .lexically_normal();
    }
    o.dry_run = args->dry_run;
    o.tested_by = args->tested_by;
    o.agent = context.agent;
    o.repo_dir = context.repo_dir;
    o.tool = {{"name", "ksandwich"},
              {"version", KSANDWICH_VERSION},
              {"git_revision", KSANDWICH_GIT_REVISION},
              {"command_line", context.command_line}};
    context.exit_code = pipeline::run(o);
  });
}

}  // namespace ks::cli

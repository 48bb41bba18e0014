#include <fmt/format.h>

#include "cli/commands.hpp"
#include "pipeline/bisect.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/ownership.hpp"

namespace ks::cli {

// Finds the commit of a git source that made the experiment slower: the first comparison
// is bad against good, then a confirm run of each candidate against good, halving the range.
void set_bisect_command(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand(
      "bisect", "find the first commit of the experiment's git source that is materially slower than "
                "--good (exit 1 when named; rerun the same command to continue an interrupted one)");
  set_exit_status(cmd, {{0, "bad vs good shows no regression, nothing to bisect; or --write-experiments wrote the steps"}, {1, "the first bad commit is named"}, {3, "bad vs good is INVALID"}, {4, "bad vs good is INCONCLUSIVE, or skipped commits leave several suspects"}});
  struct Args {
    std::string experiment, out, good, bad, reported_by, write_experiments;
    std::vector<std::string> measured;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("experiment", args->experiment, "experiment file with \"source\": {\"kind\": \"git\", ...}")
      ->required();
  cmd->add_option("--good", args->good, "a commit without the regression")->required();
  cmd->add_option("--bad", args->bad, "a later commit with it")->required();
  cmd->add_option("--out", args->out,
                  "directory for bisect.json, reply.txt and each step's run (default "
                  "results/<name>-bisect-<time>); the same DIR continues a bisection")
      ->check(non_empty_path());
  cmd->add_option("--reported-by", args->reported_by, "\"Name <email>\" for the reply's Reported-by:")
      ->check(mail_address());
  cmd->add_option("--write-experiments", args->write_experiments,
                  "measure nothing: write each commit's step experiment into this new directory, to fan "
                  "them out with `ksandwich submit --slurm DIR/*.json`")
      ->excludes("--out");
  cmd->add_option("--measured", args->measured,
                  "a directory of finished runs (a submit directory, another bisection): a step whose "
                  "experiment ran there takes that run instead of measuring (repeatable)");
  cmd->callback([args, &context] {
    auto run_options = fresh_run_options(args->experiment, args->out, context.repo_dir, "-bisect");
    pipeline::BisectOptions o;
    o.experiment_file = run_options.experiment_file;
    o.out_dir = run_options.out_dir;
    o.good = args->good;
    o.bad = args->bad;
    o.reported_by = args->reported_by;
    set_tool(run_options, context);
    o.tool = run_options.tool;
    o.agent = run_options.agent;
    o.repo_dir = run_options.repo_dir;
    if (!std::filesystem::is_regular_file(status_as_invoking_user(o.experiment_file)))
      throw UserError("experiment file " + args->experiment + " does not exist",
                      "pass an experiment with a git source, e.g. one written from configs/experiments/");
    for (auto& dir : args->measured) {
      if (!std::filesystem::is_directory(status_as_invoking_user(dir)))
        throw UserError("--measured " + dir + " is not a directory",
                        "name the directory `ksandwich submit` or an earlier bisection wrote");
      require_trusted_input(dir, "--measured");  // its bundles decide steps as if measured here
      o.measured.push_back(std::filesystem::absolute(dir).lexically_normal());
    }
    if (!args->write_experiments.empty()) {
      if (!o.measured.empty())
        throw UserError("--write-experiments measures nothing, so --measured has no use with it",
                        "drop --measured, or bisect without --write-experiments");
      auto dir = std::filesystem::absolute(args->write_experiments).lexically_normal();
      check_output_dir(dir, "--write-experiments");
      context.exit_code = pipeline::write_bisect_experiments(o, dir);
      return;
    }
    context.exit_code = pipeline::bisect(o);
  });
}

}  // namespace ks::cli

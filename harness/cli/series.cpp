// `ksandwich series EXPERIMENT --mbox FILE`: a patch series as N adjacent comparisons.
// Writes DIR/patches/ (one file per patch), DIR/experiments/<name>-pNN.json and
// DIR/series.json; `ksandwich submit --slurm DIR` or `ksandwich run` runs them, and
// `ksandwich gather DIR` makes the table of what each patch adds.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "experiment/backends.hpp"
#include "experiment/experiment.hpp"
#include "kernel/kbuild.hpp"
#include "kernel/series.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/ownership.hpp"
#include "util/hash.hpp"

namespace ks::cli {
namespace fs = std::filesystem;
using nlohmann::json;

void set_series_command(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand(
      "series", "split a patch series (an mbox) into N experiments: experiment k compares base + patches "
                "1..k-1 with base + patches 1..k, so each measures what patch k adds");
  set_exit_status(cmd, {{0, "the series' experiments were written"}});
  struct Args {
    std::string experiment, mbox, message_id, out;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("experiment", args->experiment,
                  "the base experiment (backend qemu): its source, config, workloads and its control "
                  "arm's patches are the base")->required();
  cmd->add_option("--mbox", args->mbox, "the series: a mailbox (git format-patch --stdout, lore's t.mbox)")
      ->required();
  cmd->add_option("--message-id", args->message_id,
                  "ID: when the mailbox is a saved thread, the series this Message-ID names (its cover "
                  "letter's or a patch's; <id@host>, id@host or its lore link), without replies or other versions");
  cmd->add_option("--out", args->out, "directory to write (default results/<name>-series-<time>)")
      ->check(non_empty_path());
  cmd->callback([args, &context] {
    auto o = fresh_run_options(args->experiment, args->out, context.repo_dir, "-series");
    if (!fs::is_regular_file(status_as_invoking_user(o.experiment_file)))
      throw UserError("experiment " + args->experiment + " is not a file", "pass an experiment such as configs/experiments/default.json");
    auto e = experiment::parse_file(o.experiment_file);
    if (!experiment::backend_rules(e.backend).boots_kernels)
      throw UserError("a series compares kernels, but " + args->experiment + " runs on the " + e.backend +
                          " backend, which boots none",
                      "use an experiment with \"backend\": \"qemu\" (configs/experiments/default.json)");
    experiment::require_one_run_per_process(e, "series");
    check_json_file(o.experiment_file, "experiment");
    auto mbox = fs::absolute(args->mbox).lexically_normal();
    if (!fs::is_regular_file(status_as_invoking_user(mbox)))
      throw UserError("mailbox " + args->mbox + " is not a file", "save the series with `git format-patch --stdout` or b4");
    require_trusted_input(mbox, "mailbox");
    auto text = read_input_file(mbox, kMaxInputBytes, "mailbox");
    auto patches = kernel::split_series(
        args->message_id.empty() ? text : kernel::select_series(text, args->message_id, args->mbox), args->mbox);
    if (fs::exists(o.out_dir / kernel::kSeriesManifestName))
      throw UserError(o.out_dir.string() + " already holds a series", "choose another --out");

    auto base = kernel::absolute_experiment(e, o.experiment_file.parent_path(), context.repo_dir);
    kernel::SeriesManifest manifest{o.experiment_file.string(), mbox.string(), sha256_hex(text), {}};
    // Every file is made in memory first: a series that cannot be written whole (exit 2)
    // writes nothing.
    std::vector<std::pair<fs::path, std::string>> files;
    std::vector<std::string> paths;
    for (auto& p : patches) {
      paths.push_back((o.out_dir / "patches" / p.name).string());
      files.emplace_back(paths.back(), p.text);
    }
    int n = static_cast<int>(patches.size());
    for (int k = 1; k <= n; ++k) {
      auto exp = kernel::series_experiment(base, paths, k);
      experiment::parse(exp);  // what run will read must be an experiment
      auto name = exp["name"].get<std::string>();
      auto& p = patches[static_cast<size_t>(k - 1)];
      kernel::SeriesStep step{k, p.subject, "", "patches/" + p.name, "experiments/" + name + ".json", name};
      auto parsed = kernel::parse_patch_file(p.text, p.name);
      step.message_id = parsed.patches.at(0).message_id;
      files.emplace_back(o.out_dir / step.experiment, exp.dump(2) + "\n");
      manifest.steps.push_back(step);
    }
    files.emplace_back(o.out_dir / kernel::kSeriesManifestName, json(manifest).dump(2) + "\n");
    create_output_directory(o.out_dir);
    for (const char* sub : {"patches", "experiments"}) {  // inside --out: directories, never links
      auto dir = o.out_dir / sub;
      std::error_code ec;
      if (fs::is_symlink(dir, ec))  // check_output_dir follows a link to a directory of root's
        throw UserError(dir.string() + " exists and is not a directory of its own (a link)",
                        "choose another --out, a new directory");
      check_output_dir(dir, "--out");  // refuses a file there
      fs::create_directories(dir);
    }
    for (auto& [path, content] : files) write_file_atomic(path, content);

    fmt::print("series of {} patch{} on {} -> {}\n", n, n == 1 ? "" : "es", e.name, o.out_dir.string());
    for (auto& s : manifest.steps) fmt::print("  {:>2}  {:<28} {}\n", s.index, s.name, one_line_cut(s.subject));
    fmt::print("\nrun them on one machine:\n");
    for (auto& s : manifest.steps)
      fmt::print("  ksandwich run {} --out {}\n", shell_quote((o.out_dir / s.experiment).string()),
                 shell_quote((o.out_dir / "results" / s.name).string()));
    fmt::print("or on a Slurm cluster:  ksandwich submit --slurm {}\n", shell_quote(o.out_dir.string()));
    fmt::print("then the table:         ksandwich gather {}\n", shell_quote(o.out_dir.string()));
  });
}

}  // namespace ks::cli

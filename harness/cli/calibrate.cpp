#include <fmt/format.h>

#include "cli/commands.hpp"
#include "pipeline/calibration.hpp"
#include "source/source.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::cli {
namespace fs = std::filesystem;

void set_calibrate_command(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand(
      "calibrate", "measure the noise: run the experiment's control arm alone N times (A/A) and remember "
                   "each workload's between-point spread, which `run` then uses to size confirm runs");
  set_exit_status(cmd, {{0, "calibrated; the calibration is stored"}, {3, "fewer than two control points measured: nothing stored"}});
  struct Args {
    std::string experiment, out;
    int points = 6;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("experiment", args->experiment, "experiment file (configs/experiments/*.json)")->required();
  cmd->add_option("--points", args->points, "control points to run (each a fresh boot or filesystem)")
      ->check(CLI::Range(3, 50));
  cmd->add_option("--out", args->out, "output directory of the A/A run (default results/<name>-calibration-<time>)")
      ->check(non_empty_path());
  cmd->callback([args, &context] {
    auto o = fresh_run_options(args->experiment, args->out, context.repo_dir, "-calibration");
    if (!fs::is_regular_file(status_as_invoking_user(o.experiment_file)))
      throw UserError("experiment file " + o.experiment_file.string() + " does not exist",
                      "pass a file such as configs/experiments/default.json");
    set_tool(o, context);
    auto calibration = pipeline::calibrate(o, args->points);
    if (!calibration) {
      fmt::print(stderr, "ksandwich: calibration: fewer than two control points measured; nothing stored\n");
      context.exit_code = kExitPointFailed;
      return;
    }
    auto cache = source::default_cache_root();
    fmt::print("\ncalibration {} ({})\n", calibration->key, calibration->identity.dump());
    for (auto& [shape, noise] : calibration->workloads)
      fmt::print("  {:<40} {} points, between-point sd {:.2f}%, one block's ln(P/C) sd {:.2f}%\n", shape,
                 noise.points, 100 * noise.sd_log_point, 100 * noise.sd_block_log_ratio());
    fmt::print("stored in {}\n", pipeline::calibration_file(cache, calibration->key).string());
    fmt::print("the A/A run: {}\n", (o.out_dir / "report.txt").string());
    context.exit_code = kExitOk;
  });
}

}  // namespace ks::cli

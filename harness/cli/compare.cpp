#include <fmt/format.h>

#include "analysis/analyze.hpp"
#include "cli/commands.hpp"
#include "pipeline/validate.hpp"
#include "pipeline/compare.hpp"
#include "report/report.hpp"

namespace ks::cli {

void set_compare_command(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand("compare", "the same analysis across two bundles of the same workloads "
                                            "(e.g. last night's and tonight's): A plays control, B patched");
  set_exit_status(cmd, verdict_exits());
  struct Args {
    std::string before, after, arm = "patched", format = "text";
    std::optional<double> material_pct;
    bool allow_environment_change = false;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("before", args->before, "A: the reference bundle.json (or .json.gz)")->required();
  cmd->add_option("after", args->after, "B: the bundle.json (or .json.gz) to judge")->required();
  cmd->add_option("--arm", args->arm, "which arm of each bundle: control | patched | all")
      ->check(CLI::IsMember({"control", "patched", "all"}));
  cmd->add_option("--material-pct", args->material_pct,
                  "smallest change that counts as material (default: the runs' own gates.material_pct)")
      ->check(material_pct());
  cmd->add_flag("--allow-environment-change", args->allow_environment_change,
                "compare runs of different machines, backends, accelerators, kernel configs or tool "
                "major versions (refused otherwise); the report lists the differences first");
  cmd->add_option("--format", args->format, "text | markdown | html | json")
      ->check(CLI::IsMember({"text", "markdown", "html", "json"}));
  cmd->callback([args, &context] {
    pipeline::CompareOptions o;
    o.arm = args->arm;
    o.material_pct = args->material_pct;
    o.allow_environment_change = args->allow_environment_change;
    check_bundle_file(args->before);
    check_bundle_file(args->after);
    auto result = pipeline::compare_bundles(pipeline::load_schema_valid_bundle(args->before),
                                            pipeline::load_schema_valid_bundle(args->after), o);
    fmt::print("{}", report::render(result, args->format));
    context.exit_code = analysis::exit_code_for(result);
  });
}

}  // namespace ks::cli

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "pipeline/validate.hpp"
#include "report/junit.hpp"
#include "util/files.hpp"

namespace ks::cli {

void set_junit_command(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand("junit", "JUnit XML of a bundle for CI: one test case per workload (material "
                                          "regression: failure; INVALID: error; INCONCLUSIVE: skipped; an unfinished run: an error)");
  set_exit_status(cmd, {{0, "the XML was written (a regression is a failure inside it, not an exit status)"}});
  struct Args {
    std::string bundle, out;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("bundle", args->bundle, "bundle.json")->required();
  cmd->add_option("--out", args->out, "write the XML here instead of standard output")
      ->check(non_empty_path());
  cmd->callback([args, &context] {
    check_bundle_file(args->bundle);
    if (!args->out.empty()) check_output_file(args->out, "--out");
    auto xml = report::junit(pipeline::load_recomputed_bundle(args->bundle));
    if (args->out.empty())
      fmt::print("{}", xml);
    else
      write_file_atomic(args->out, xml);
    context.exit_code = 0;
  });
}

}  // namespace ks::cli

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "pipeline/validate.hpp"
#include "report/report.hpp"

namespace ks::cli {

void set_report_command(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand("report", "render a bundle again as text, markdown or html");
  struct Args {
    std::string bundle, format = "text", tested_by;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("bundle", args->bundle, "bundle.json")->required();
  cmd->add_option("--format", args->format, "text | markdown | html")
      ->check(CLI::IsMember({"text", "markdown", "html"}));
  cmd->add_option("--tested-by", args->tested_by, "\"Name <email>\" for the reply block");
  cmd->callback([args, &context] {
    check_json_file(args->bundle, "bundle");
    auto bundle = pipeline::load_schema_valid_bundle(args->bundle);  // a bundle that fails its schema: exit 2
    fmt::print("{}", report::render(bundle, args->format, report::Options{args->tested_by}));
    context.exit_code = 0;
  });
}

}  // namespace ks::cli

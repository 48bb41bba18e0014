#include <fmt/format.h>

#include "cli/commands.hpp"
#include "pipeline/bundle_file.hpp"
#include "util/error.hpp"

namespace ks::cli {

void set_validate_command(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand("validate", "check a bundle (yours or someone else's) against the "
                                             "schema and its own arithmetic");
  auto path = std::make_shared<std::string>();
  cmd->add_option("bundle", *path, "bundle.json")->required();
  cmd->callback([path, &context] {
    check_json_file(*path, "bundle");
    auto problems = pipeline::validate_bundle_file(*path, context.repo_dir / "results-schema");
    for (auto& p : problems) fmt::print(stderr, "invalid: {}\n", p);
    if (!problems.empty())
      throw UserError(fmt::format("{}: {} problem(s) found", *path, problems.size()),
                      "the bundle was changed after it was written, or made by an incompatible version");
    fmt::print("{}: valid (schema and arithmetic)\n", *path);
    context.exit_code = 0;
  });
}

}  // namespace ks::cli

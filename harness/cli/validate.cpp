#include <fmt/format.h>

#include "cli/commands.hpp"
#include "pipeline/validate.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::cli {

// Exit 0: the bundle matches its schema and every derived field and gate follows from its
// raw rows and points. Exit 2 otherwise (as for any input that is not what it claims to
// be): each problem is listed, on stderr as text, or on stdout with --format json.
void set_validate_command(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand(
      "validate", "check a bundle (yours or someone else's): its schema (compiled in), and every "
                  "verdict, estimate, interval and gate recomputed from its raw rows; exit 0 valid, 2 not");
  set_exit_status(cmd, {{0, "valid: the schema holds and every derived field recomputes"}, {2, "not valid, or not a bundle: the field and what differs are named"}});
  struct Args {
    std::string bundle, format = "text";
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("bundle", args->bundle, "bundle.json")->required();
  cmd->add_option("--format", args->format,
                  "text | json ({\"valid\", \"schema_errors\", \"recomputed_mismatches\"} on stdout)")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->callback([args, &context] {
    check_bundle_file(args->bundle);
    auto v = pipeline::validate_bundle_file(args->bundle);
    if (args->format == "json") {
      fmt::print("{}\n", nlohmann::json(v).dump(2, ' ', true, nlohmann::json::error_handler_t::replace));
    } else {
      for (auto& e : v.schema_errors) fmt::print(stderr, "invalid: {}\n", one_line(pipeline::describe(e)));
      for (auto& m : v.recomputed_mismatches) fmt::print(stderr, "invalid: {}\n", one_line(pipeline::describe(m)));
    }
    if (!v.valid())
      throw UserError(fmt::format("{}: {} schema error(s), {} field(s) that do not follow from the raw data",
                                  one_line(args->bundle), v.schema_errors.size(), v.recomputed_mismatches.size()),
                      "the bundle was changed after it was written, or made by an incompatible version");
    if (args->format == "text")
      fmt::print("{}: valid (schema, and every derived field recomputed from the raw rows)\n", one_line(args->bundle));
    context.exit_code = 0;
  });
}

}  // namespace ks::cli

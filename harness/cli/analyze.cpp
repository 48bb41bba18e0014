#include <fmt/format.h>

#include "analysis/analyze.hpp"
#include "cli/commands.hpp"
#include "evidence/bundle.hpp"
#include "pipeline/bundle_file.hpp"
#include "pipeline/validate.hpp"
#include "report/report.hpp"
#include "util/files.hpp"

namespace ks::cli {

// `ksandwich analyze BUNDLE`: the bundle judged again by this ksandwich. What changed is
// listed on stderr (nothing, for a bundle this version wrote), the report of the re-judged
// bundle goes to stdout, and its exit code is the one `run` would give it now.
void set_analyze_command(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand(
      "analyze", "judge a bundle again with this ksandwich: every estimate, interval, gate and verdict "
                 "re-derived from its experiment, points and raw rows (an old, stale or edited bundle); "
                 "exit codes as for run");
  set_exit_status(cmd, verdict_exits());
  struct Args {
    std::string bundle, format = "text", out;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("bundle", args->bundle, "bundle.json or bundle.json.gz")->required();
  cmd->add_option("--format", args->format, "the report of the re-judged bundle: text | markdown | html | json")
      ->check(CLI::IsMember({"text", "markdown", "html", "json"}));
  cmd->add_option("--out", args->out, "also write the re-judged bundle here (JSON)")->check(non_empty_path());
  cmd->callback([args, &context] {
    check_bundle_file(args->bundle);
    if (!args->out.empty()) check_output_file(args->out, "--out");
    auto stored = pipeline::load_schema_valid_bundle(args->bundle);
    auto again = pipeline::rejudged(stored);
    auto changes = pipeline::judgement_changes(evidence::to_json(stored), stored, again);
    for (auto& m : changes) fmt::print(stderr, "re-judged: {}\n", one_line(pipeline::describe(m)));
    fmt::print(stderr, "{}: {} field(s) differ from what this ksandwich derives; verdict {} (was {})\n",
               one_line(args->bundle), changes.size(), one_line(again.verdict), one_line(stored.verdict));
    if (!args->out.empty()) write_file_atomic(args->out, evidence::to_json(again).dump(2) + "\n");
    fmt::print("{}", report::render(again, args->format, {}));
    context.exit_code = analysis::exit_code_for(again);
  });
}

}  // namespace ks::cli

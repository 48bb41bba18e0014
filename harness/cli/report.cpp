#include <fmt/format.h>

#include "cli/commands.hpp"
#include "pipeline/bundle_file.hpp"
#include "pipeline/validate.hpp"
#include "report/report.hpp"
#include "util/error.hpp"

namespace ks::cli {

void add_reply_options(CLI::App* cmd, report::Options& reply) {
  cmd->add_option("--tested-by", reply.tester,
                  "\"Name <email>\" of who ran it: the reply carries Tested-by: when the verdict is "
                  "NO_CHANGE or IMPROVEMENT, Reported-by: for a REGRESSION, neither otherwise")
      ->check(mail_address());
  cmd->add_option("--in-reply-to", reply.in_reply_to,
                  "MESSAGE-ID of the thread the reply answers (its In-Reply-To: and Closes: "
                  "https://lore.kernel.org/r/ID); default: the Message-ID of the patch, when it came from a mailbox")
      ->check(message_id());
  cmd->add_option("--from", reply.from, "\"Name <email>\" the reply is from (default: --tested-by)")->check(mail_address());
  cmd->add_option("--to", reply.to, "address the reply goes to (repeatable; default: the patch's author)")
      ->check(mail_address());
  cmd->add_option("--cc", reply.cc,
                  "address the reply is copied to (repeatable; default: the patch mail's To: and Cc:, the list among them)")
      ->check(mail_address());
}

void set_report_command(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand("report", "render a bundle again as text, markdown, html or json");
  set_exit_status(cmd, {{0, "the report was written"}});
  struct Args {
    std::string bundle, format = "text";
    report::Options reply;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("bundle", args->bundle, "bundle.json or bundle.json.gz")->required();
  cmd->add_option("--format", args->format,
                  "text | markdown | html | json | eml (the reply as a MIME mail with the bundle attached)")
      ->check(CLI::IsMember({"text", "markdown", "html", "json", "eml"}));
  add_reply_options(cmd, args->reply);
  cmd->callback([args, &context] {
    check_bundle_file(args->bundle);
    std::string text;
    // A bundle that fails its schema: exit 2; the reply also one whose figures are not its rows'.
    auto bundle = args->format == "eml" ? pipeline::load_recomputed_bundle(args->bundle, &text)
                                        : pipeline::load_schema_valid_bundle(args->bundle, &text);
    // A run writes its analysis after every point: one with a point still pending has not
    // finished (thirty-second attack: a reply for 3 of 6 planned blocks, with Tested-by:).
    const bool unfinished = !bundle.analysis || evidence::pending_points(bundle) > 0;
    if (args->format == "eml" && unfinished)
      throw UserError(args->bundle + " is a run that has not finished: it has no verdict to reply with",
                      "finish it (ksandwich run --resume DIR), then reply");
    auto reply = args->reply;
    // The other views show what the file says, but the reply in them only for what eml would
    // send (thirty-third attack: an edited verdict shown as a reply with Tested-by:).
    if (unfinished) reply.no_reply = "the run has not finished";
    else if (args->format != "eml" && !pipeline::check_recomputation(nlohmann::json::parse(text), bundle).empty())
      reply.no_reply = "what the bundle says does not follow from its raw data (`ksandwich validate` says where)";
    // The reply attaches the bundle just read and checked, compressed as a run writes it.
    reply.attachment = pipeline::bundle_attachment(text);
    fmt::print("{}", report::render(bundle, args->format, reply));
    context.exit_code = 0;
  });
}

}  // namespace ks::cli

#include "report/report.hpp"

#include "util/error.hpp"

namespace ks::report {

std::string render(const evidence::Bundle& bundle, const std::string& format,
                   const Options& options) {
  if (format == "text") return text(bundle, options);
  if (format == "markdown") return markdown(bundle, options);
  if (format == "html") return html(bundle, options);
  if (format == "json") return json(bundle, options);
  if (format == "eml") {
    if (auto m = mail(bundle, options)) return *m;
    throw UserError("this run answers no thread: its patch came with no Message-ID",
                    "give --in-reply-to MESSAGE-ID (the patch mail's), or run on the patch saved as a mailbox");
  }
  throw UserError("report: unknown format '" + format + "'", "use --format text, markdown, html, json or eml");
}

}  // namespace ks::report

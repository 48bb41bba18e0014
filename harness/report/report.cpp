#include "report/report.hpp"

#include "util/error.hpp"

namespace ks::report {

std::string render(const evidence::Bundle& bundle, const std::string& format,
                   const Options& options) {
  if (format == "text") return text(bundle, options);
  if (format == "markdown") return markdown(bundle, options);
  if (format == "html") return html(bundle, options);
  if (format == "json") return json(bundle, options);
  throw UserError("report: unknown format '" + format + "'", "use --format text, markdown, html or json");
}

}  // namespace ks::report

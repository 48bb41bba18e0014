#pragma once
// Views of a bundle: plain text for a mailing-list reply, markdown for issue trackers,
// one self-contained HTML file (inline SVG, no network). Pure: bundle in, text out.
#include <string>

#include "evidence/bundle.hpp"

namespace ks::report {

struct Options {
  std::string tested_by;  // "Name <email>": adds a Tested-by: line to the reply block when clean
};

std::string text(const evidence::Bundle& bundle, const Options& options = {});
std::string markdown(const evidence::Bundle& bundle, const Options& options = {});
std::string html(const evidence::Bundle& bundle, const Options& options = {});

// "text" | "markdown" | "html"; throws UserError for another name.
std::string render(const evidence::Bundle& bundle, const std::string& format,
                   const Options& options = {});

}  // namespace ks::report

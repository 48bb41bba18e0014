// The markdown view, for issue trackers: GitHub-flavoured headings, lists and tables.
// Everything from the bundle is escaped, so a bundle cannot inject markup.
#include <algorithm>

#include "report/document.hpp"
#include "report/format.hpp"

namespace ks::report {

namespace detail {

// '<' and '&' are enough to stop HTML; '>' matters only where it would open a quote.
std::string markdown_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += out.empty() ? "&gt;" : ">";
        break;
      case '\n':
        out += "<br>";
        break;
      case '\\':
      case '`':
      case '*':
      case '_':
      case '[':
      case ']':
      case '|':
      case '#':
        out += '\\';
        out += c;
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace detail

namespace {

using detail::Align;
using detail::Block;
using detail::markdown_escape;

std::string table(const detail::Table& t) {
  std::string out = "|";
  for (auto& c : t.columns) out += " " + markdown_escape(c.title) + " |";
  out += "\n|";
  for (auto& c : t.columns) out += c.align == Align::right ? " ---: |" : " :--- |";
  out += "\n";
  for (auto& row : t.rows) {
    out += "|";
    for (size_t c = 0; c < t.columns.size(); ++c)
      out += " " + (c < row.size() ? markdown_escape(row[c].text) : std::string()) + " |";
    out += "\n";
  }
  return out;
}

// A fence longer than any run of backticks inside, so the block cannot be closed early.
std::string fenced(const std::string& text) {
  size_t longest = 0, run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  std::string fence(std::max<size_t>(3, longest + 1), '`');
  std::string body = text.empty() || text.back() == '\n' ? text : text + "\n";
  return fence + "text\n" + body + fence + "\n";
}

std::string strip_bullet(const std::string& text) {
  return text.rfind("- ", 0) == 0 ? text.substr(2) : text;
}

}  // namespace

std::string markdown(const evidence::Bundle& bundle, const Options& options) {
  auto doc = detail::build_document(bundle, options);
  std::string out = "# " + markdown_escape(doc.title) + "\n\n**Verdict: " + markdown_escape(doc.verdict) + "**\n";
  auto& blocks = doc.blocks;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const Block& block = blocks[i];
    switch (block.kind) {
      case Block::Kind::heading:
        out += "\n## " + markdown_escape(block.text) + "\n";
        break;
      case Block::Kind::paragraph: {
        // Runs of one kind of line (verdicts, failed gates, health) become a list.
        size_t end = i + 1;
        while (end < blocks.size() && blocks[end].kind == Block::Kind::paragraph &&
               blocks[end].cls == block.cls)
          ++end;
        out += "\n";
        if (end - i == 1) {
          out += markdown_escape(block.text) + "\n";
        } else {
          for (size_t k = i; k < end; ++k)
            out += "- " + markdown_escape(strip_bullet(blocks[k].text)) + "\n";
          i = end - 1;
        }
        break;
      }
      case Block::Kind::facts:
        if (i == 0 || blocks[i - 1].kind != Block::Kind::facts) out += "\n";  // one list
        for (auto& [key, value] : block.facts)
          out += "- **" + markdown_escape(key) + ":** " + markdown_escape(value) + "\n";
        break;
      case Block::Kind::table:
        out += "\n" + table(block.table);
        break;
      case Block::Kind::preformatted:
        out += "\n" + fenced(block.text);
        break;
      case Block::Kind::plot:
        break;  // the HTML view has the plots
    }
  }
  return out;
}

}  // namespace ks::report

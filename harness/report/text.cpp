// The plain-text view: what gets pasted into a mailing-list reply. ASCII, every line within
// 78 columns (a table too wide for that becomes one wrapped line a row), detail blocks
// left out.
#include <fmt/format.h>

#include <algorithm>

#include "report/document.hpp"
#include "report/format.hpp"
#include "util/files.hpp"

namespace ks::report {
namespace {

using detail::Align;
using detail::Block;

std::string rtrim(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// A long title (a comparison names both runs) wraps; the rule is as long as its widest line.
std::string underline(const std::string& title, char c) {
  std::string text = detail::wrap(title, detail::kTextWidth);
  size_t widest = 0;
  for (size_t start = 0; start <= text.size();) {
    size_t end = std::min(text.find('\n', start), text.size());
    widest = std::max(widest, end - start);
    start = end + 1;
  }
  return text + "\n" + std::string(std::min(widest, detail::kTextWidth), c) + "\n";
}

std::string facts(const Block& block) {
  size_t key_width = 0;
  for (auto& [key, value] : block.facts) key_width = std::max(key_width, key.size() + 2);
  std::string out;
  for (auto& [key, value] : block.facts) {
    std::string first = key + ":" + std::string(key_width - key.size() - 1, ' ');
    out += detail::wrap(value, detail::kTextWidth, first, std::string(key_width, ' ')) + "\n";
  }
  return out;
}

// A table wider than the text width cannot be pasted into mail: each row becomes one
// wrapped line instead, "first cell: title value, title value, ...".
std::string records(const detail::Table& t) {
  std::string out;
  for (auto& row : t.rows) {
    std::string line = row.empty() ? std::string() : row[0].text + ":";
    for (size_t c = 1; c < row.size() && c < t.columns.size(); ++c)
      if (!row[c].text.empty())
        line += (c > 1 ? ", " : " ") + t.columns[c].title + " " + row[c].text;
    out += detail::wrap(line, detail::kTextWidth, "", "    ") + "\n";
  }
  return out;
}

std::string table(const detail::Table& t) {
  constexpr size_t kGap = 3;
  std::vector<size_t> width(t.columns.size(), 0);
  for (size_t c = 0; c < t.columns.size(); ++c) width[c] = t.columns[c].title.size();
  for (auto& row : t.rows)
    for (size_t c = 0; c < row.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], row[c].text.size());
  size_t total = width.empty() ? 0 : kGap * (width.size() - 1);
  for (auto w : width) total += w;
  if (total > detail::kTextWidth) return records(t);
  auto line = [&](auto cell_text) {
    std::string out;
    for (size_t c = 0; c < t.columns.size(); ++c) {
      std::string text = cell_text(c);
      if (c > 0) out += std::string(kGap, ' ');
      if (t.columns[c].align == Align::right)
        out += std::string(width[c] - text.size(), ' ') + text;
      else
        out += text + std::string(width[c] - text.size(), ' ');
    }
    return rtrim(out) + "\n";
  };
  std::string out = line([&](size_t c) { return t.columns[c].title; });
  for (auto& row : t.rows)
    out += line([&](size_t c) { return c < row.size() ? row[c].text : std::string(); });
  return out;
}

// Console and kernel-log lines are kept whole in substance but broken at the width, the
// rest indented under the first. The reply block is left as built: a trailer is one line.
std::string preformatted(const Block& block) {
  std::string text = block.text.empty() || block.text.back() == '\n' ? block.text : block.text + "\n";
  if (block.cls == "ks-reply") return text;
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string line = text.substr(start, end - start);
    start = end + 1;
    size_t indent = line.find_first_not_of(' ');
    std::string rest(std::min<size_t>(indent == std::string::npos ? 2 : indent + 2, 8), ' ');
    // Pieces taken at an offset (a line of megabytes costs its length, not its square), each
    // ending before a UTF-8 continuation byte: a character cut in two is no UTF-8, and its
    // second half may be 0x9b, ESC [ to an 8-bit terminal (twenty-third attack).
    auto piece_end = [&](size_t from, size_t width) {
      size_t end = std::min(line.size(), from + width);
      while (end > from + 1 && end < line.size() && (static_cast<unsigned char>(line[end]) & 0xc0) == 0x80) --end;
      return end;
    };
    size_t at = piece_end(0, detail::kTextWidth);
    out += line.substr(0, at) + "\n";
    while (at < line.size()) {
      const size_t end = piece_end(at, detail::kTextWidth - rest.size());
      out += rest + line.substr(at, end - at) + "\n";
      at = end;
    }
  }
  return out;
}

std::string block_text(const Block& block) {
  switch (block.kind) {
    case Block::Kind::heading:
      return underline(block.text, '-');
    case Block::Kind::paragraph:
      // Wrapped lines indented under the first: no word a bundle wrote starts a line.
      return detail::wrap(block.text, detail::kTextWidth, "", std::string(std::max<size_t>(block.indent, 2), ' ')) + "\n";
    case Block::Kind::facts:
      return facts(block);
    case Block::Kind::table:
      return table(block.table);
    case Block::Kind::preformatted:
      return preformatted(block);
    case Block::Kind::plot:
      return "";
  }
  return "";
}

// The trailers b4 collects without an address in them ("-by:" ones aside).
constexpr std::string_view kTrailerTags[] = {"fixes:", "link:", "closes:", "buglink:", "cc:"};

// Whether LINE could pass for one of the report's own verdict lines or for a trailer b4
// collects, where the report's own lines never do: it starts (after spaces, and characters one
// does not see) with "Verdict:"; its first word holds a character outside ASCII (a lookalike:
// Cyrillic "Vеrdict:", a colon of another script, a combining mark, an invisible word); or b4
// would take it (reads_as_trailer) and it names an address, ends in "-by:" or is one of
// kTrailerTags. The report's own lines start with ASCII words and hold no address.
bool passes_for_ours(std::string_view line) {
  auto shown = one_line(line);
  auto first = shown.find_first_not_of(' ');
  if (first == std::string::npos) return false;
  std::string_view text = std::string_view(shown).substr(first);
  if (lower(std::string(text.substr(0, 8))) == "verdict:") return true;
  auto word = text.substr(0, text.find(' '));
  if (!std::all_of(word.begin(), word.end(), [](unsigned char c) { return c < 0x80; })) return true;
  const auto name = lower(std::string(word));
  return detail::reads_as_trailer(text) &&
         (detail::holds_address(text) || name.ends_with("-by:") ||
          std::find(std::begin(kTrailerTags), std::end(kTrailerTags), name) != std::end(kTrailerTags));
}

// Only the report's own verdict line starts with "Verdict:": a line of BLOCK's TEXT that a
// bundle's words brought there (a claim, a failure reason, an audit field, wrapped) and that
// passes for one of ours is indented, behind "| " as the reply guards a trailer. The reply
// block keeps its own lines (its trailers are guarded where it is built).
std::string quoted_lines_guarded(const Block& block, const std::string& text) {
  if (block.cls == "ks-reply") return text;
  std::string out;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    std::string_view line(text.data() + start, end - start);
    bool own = block.cls == "ks-overall" && start == 0;
    out += (!own && passes_for_ours(line) ? "| " : "") + std::string(line) + "\n";
  }
  return out + text.substr(start);
}

}  // namespace

std::string text(const evidence::Bundle& bundle, const Options& options) {
  auto doc = detail::build_document(bundle, options);
  std::string out = underline(doc.title, '=');
  const Block* previous = nullptr;
  for (auto& block : doc.blocks) {
    if (block.detail || block.kind == Block::Kind::plot) continue;
    // Runs of one kind of line (verdicts, failed gates, health) stay together.
    bool run = previous && previous->kind == Block::Kind::paragraph &&
               block.kind == Block::Kind::paragraph && previous->cls == block.cls;
    if (!run) out += "\n";
    out += quoted_lines_guarded(block, block_text(block));
    previous = &block;
  }
  return out;
}

}  // namespace ks::report

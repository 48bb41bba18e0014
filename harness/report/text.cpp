// The plain-text view: what gets pasted into a mailing-list reply. ASCII, lines wrapped
// near 78 columns (tables cannot wrap), detail blocks left out.
#include <fmt/format.h>

#include <algorithm>

#include "report/document.hpp"
#include "report/format.hpp"

namespace ks::report {
namespace {

using detail::Align;
using detail::Block;

constexpr size_t kWidth = 78;

std::string rtrim(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

std::string underline(const std::string& title, char c) {
  return title + "\n" + std::string(std::min(title.size(), kWidth), c) + "\n";
}

std::string facts(const Block& block) {
  size_t key_width = 0;
  for (auto& [key, value] : block.facts) key_width = std::max(key_width, key.size() + 2);
  std::string out;
  for (auto& [key, value] : block.facts) {
    std::string first = key + ":" + std::string(key_width - key.size() - 1, ' ');
    out += detail::wrap(value, kWidth, first, std::string(key_width, ' ')) + "\n";
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

std::string block_text(const Block& block) {
  switch (block.kind) {
    case Block::Kind::heading:
      return underline(block.text, '-');
    case Block::Kind::paragraph:
      return detail::wrap(block.text, kWidth, "", std::string(block.indent, ' ')) + "\n";
    case Block::Kind::facts:
      return facts(block);
    case Block::Kind::table:
      return table(block.table);
    case Block::Kind::preformatted:
      return block.text.empty() || block.text.back() == '\n' ? block.text : block.text + "\n";
    case Block::Kind::plot:
      return "";
  }
  return "";
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
    out += block_text(block);
    previous = &block;
  }
  return out;
}

}  // namespace ks::report

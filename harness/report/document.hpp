#pragma once
// What a report says, decided once: a list of blocks (headings, sentences, tables, ...).
// text.cpp, markdown.cpp and html.cpp only decide how it looks. Pure.
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "evidence/bundle.hpp"
#include "report/report.hpp"

namespace ks::report::detail {

enum class Align { left, right };

struct Column {
  std::string title;
  Align align = Align::left;
};

struct Cell {
  std::string text;
  std::string full;  // the whole value when `text` was shortened (HTML shows it on hover)
  // A signed size HTML draws beside the text as a bar, scaled to the column's largest
  // (a profile's own-time change: right and red is more time); the other views ignore it.
  std::optional<double> bar;

  // Implicit: cells are mostly plain strings.
  Cell(std::string t = {}) : text(std::move(t)) {}  // NOLINT(google-explicit-constructor)
  Cell(const char* t) : text(t) {}                  // NOLINT(google-explicit-constructor)
  Cell(std::string t, std::string f) : text(std::move(t)), full(std::move(f)) {}
};

struct Table {
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;
};

struct Block {
  enum class Kind { heading, paragraph, facts, table, preformatted, plot };
  Kind kind = Kind::paragraph;
  std::string cls;            // HTML class (ks-sandwich, ks-verdict, ...), also a stable test hook
  std::string text;           // heading, paragraph, preformatted; plot: the workload id
  size_t indent = 0;          // paragraph: text view indents continuation by this much
  std::string caption, note;  // plot: title above it, verdict line below it
  std::vector<std::pair<std::string, std::string>> facts;
  Table table;
  // Detail blocks are left out of the text view (a mailing-list reply stays short) and
  // shown by markdown and HTML.
  bool detail = false;
};

// One workload's decision as numbers, for scripts (the json view); its verdict line says
// the same in words. NaN (null in JSON) where the run could not compute it.
struct WorkloadVerdict {
  std::string workload, metric, unit, verdict;
  bool material = false;
  double change_pct = 0;  // patched vs control, the estimate the verdict reads
  double ci_low_pct = std::nan(""), ci_high_pct = std::nan(""), ci_level = std::nan("");
  double mde_pct = std::nan("");
  std::string line;  // the verdict line
};

// The reply to the patch's thread (reply.cpp): the text views show it, mail() sends it.
struct ReplyMail {
  std::string subject;              // "Re: ...", one line
  std::string in_reply_to;          // the bare Message-ID it answers
  std::string from;                 // "Name <a@b>", or "" (the mailer fills it in)
  std::vector<std::string> to, cc;  // bare addresses
  std::string body;                 // the text: quote, summary, table, where, attachment, trailers
};

struct Document {
  std::string title;
  std::string verdict;
  std::vector<WorkloadVerdict> workloads;
  std::vector<Block> blocks;
  std::optional<ReplyMail> reply;  // when the run answers a thread
};

Document build_document(const evidence::Bundle& bundle, const Options& options);

// The SVG plot of every round of every point of one workload, in run order.
std::string svg_plot(const evidence::Bundle& bundle, const std::string& workload);

// An axis step: 1, 2 or 5 times a power of ten, near range / 5.
double nice_step(double range);

// Escapes & < > " ' for HTML text and attribute values.
std::string html_escape(std::string_view text);

// Markdown text that stays text: HTML and the characters that start markup (`*_[]|#\` and
// the backtick) escaped, newlines as <br>, so a table cell or heading from a bundle or a mail
// cannot add cells, links, images or HTML.
std::string markdown_escape(std::string_view text);

}  // namespace ks::report::detail

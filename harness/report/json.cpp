// The json view: the report model itself (document.hpp), the same blocks the text,
// markdown and HTML views render, plus each workload's decision as numbers, so scripts
// and CI read what a person reads (`ksandwich report --format json B | jq .verdict`).
#include <nlohmann/json.hpp>

#include "report/document.hpp"

namespace ks::report {
namespace detail {

NLOHMANN_JSON_SERIALIZE_ENUM(Align, {{Align::left, "left"}, {Align::right, "right"}})
NLOHMANN_JSON_SERIALIZE_ENUM(Block::Kind, {{Block::Kind::heading, "heading"},
                                           {Block::Kind::paragraph, "paragraph"},
                                           {Block::Kind::facts, "facts"},
                                           {Block::Kind::table, "table"},
                                           {Block::Kind::preformatted, "preformatted"},
                                           {Block::Kind::plot, "plot"}})
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Column, title, align)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Cell, text, full)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Table, columns, rows)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Block, kind, cls, text, indent, caption, note, facts, table,
                                   detail)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(WorkloadVerdict, workload, metric, unit, verdict, material,
                                   change_pct, ci_low_pct, ci_high_pct, ci_level, mde_pct, line)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Document, title, verdict, workloads, blocks)

}  // namespace detail

std::string json(const evidence::Bundle& bundle, const Options& options) {
  nlohmann::json j = detail::build_document(bundle, options);
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";  // not UTF-8: U+FFFD
}

}  // namespace ks::report

#include "report/format.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>

namespace ks::report::detail {

Unit unit_for(const std::string& metric, const evidence::Clock& clock) {
  if (metric == "iops") return {"IOPS" + clock.rate_note, 1.0, true};
  if (metric == "bytes_per_s") return {"MiB/s" + clock.rate_note, 1.0 / (1024.0 * 1024.0), true};
  if (metric == "ns_per_op") return {clock.ns_name + "/op", 1.0, false};
  return {metric, 1.0, false};
}

std::string fixed(double value, int decimals) {
  if (!std::isfinite(value)) return "n/a";
  return fmt::format("{:.{}f}", value, decimals);
}

std::string percent(double value, int decimals) {
  if (!std::isfinite(value)) return "n/a";
  return fmt::format("{:.{}f}%", value, decimals);
}

std::string signed_percent(double value, int decimals) {
  if (!std::isfinite(value)) return "n/a";
  return fmt::format("{:+.{}f}%", value, decimals);
}

std::string ratio_percent(double ratio, int decimals) {
  return signed_percent((ratio - 1.0) * 100.0, decimals);
}

std::string spread_percent(double stddev, double mean) {
  if (mean == 0 || !std::isfinite(stddev / mean)) return "+-n/a";
  return "+-" + percent(std::fabs(100 * stddev / mean), 1);
}

std::string thousands(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string p_value(double p) {
  if (!std::isfinite(p)) return "p n/a";
  if (p < 0.0001) return "p<0.0001";
  return fmt::format("p={:.2g}", p);
}

std::string shorten(const std::string& value) {
  constexpr size_t kKeep = 12;
  bool hex = value.size() >= 32;
  for (char c : value) hex = hex && std::isxdigit(static_cast<unsigned char>(c));
  if (hex) return value.substr(0, kKeep) + "...";
  // Other long values (paths, compiler banners) keep their head, which names them.
  constexpr size_t kLong = 40;
  if (value.size() > kLong) return value.substr(0, kLong - 3) + "...";
  return value;
}

std::string english_list(const std::vector<std::string>& items) {
  if (items.empty()) return "";
  if (items.size() == 1) return items[0];
  if (items.size() == 2) return items[0] + " and " + items[1];
  std::string out;
  for (size_t i = 0; i + 1 < items.size(); ++i) out += items[i] + ", ";
  return out + "and " + items.back();
}

std::string wrap(std::string_view text, size_t width, std::string_view first,
                 std::string_view rest) {
  std::string out(first);
  size_t column = first.size();
  bool line_empty = true;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '\n') {  // explicit line breaks survive
      out += '\n';
      out += rest;
      column = rest.size();
      line_empty = true;
      ++i;
      continue;
    }
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    size_t end = text.find_first_of(" \n", i);
    if (end == std::string_view::npos) end = text.size();
    std::string_view word = text.substr(i, end - i);
    if (!line_empty && column + 1 + word.size() > width) {
      out += '\n';
      out += rest;
      column = rest.size();
      line_empty = true;
    }
    if (!line_empty) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
    line_empty = false;
    i = end;
  }
  return out;
}

std::string scalar(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "yes" : "no";
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  if (value.is_number_unsigned()) return std::to_string(value.get<uint64_t>());
  if (value.is_number_float()) return fmt::format("{}", value.get<double>());
  if (value.is_array()) {
    std::string out;
    for (auto& item : value) {
      std::string s = scalar(item);
      if (s.empty()) continue;
      if (!out.empty()) out += ' ';
      out += s;
    }
    return out;
  }
  return "";
}

std::string first_of(const nlohmann::json& object, std::initializer_list<const char*> keys) {
  if (!object.is_object()) return "";
  for (const char* key : keys) {
    auto it = object.find(key);
    if (it == object.end()) continue;
    std::string s = scalar(*it);
    if (!s.empty()) return s;
  }
  return "";
}

std::optional<uint64_t> count_of(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  auto it = object.find(key);
  if (it == object.end()) return std::nullopt;
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  if (it->is_number_integer() && it->get<int64_t>() >= 0) return it->get<int64_t>();
  if (it->is_number_float() && it->get<double>() >= 0) return std::llround(it->get<double>());
  return std::nullopt;
}

namespace {
const nlohmann::json* field(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}
}  // namespace

bool field_or(const nlohmann::json& object, const char* key, bool fallback) {
  auto* f = field(object, key);
  return f && f->is_boolean() ? f->get<bool>() : fallback;
}

double field_or(const nlohmann::json& object, const char* key, double fallback) {
  auto* f = field(object, key);
  return f && f->is_number() ? f->get<double>() : fallback;
}

std::string field_or(const nlohmann::json& object, const char* key, const std::string& fallback) {
  auto* f = field(object, key);
  return f && f->is_string() ? f->get<std::string>() : fallback;
}

std::string display_name(const std::string& author) {
  auto lt = author.find('<');
  if (lt == std::string::npos || lt == 0) return author;
  // Without its quotes and trailing spaces, cut once (a name may be megabytes of quotes).
  auto from = author.find_first_not_of('"');
  auto to = author.find_last_not_of(" \"", lt - 1);
  if (from == std::string::npos || to == std::string::npos || from > to) return author;
  return author.substr(from, to - from + 1);
}

// Whether TEXT holds an address (x@y: no space on either side of the @).
bool holds_address(std::string_view text) {
  for (auto at = text.find('@'); at != std::string_view::npos; at = text.find('@', at + 1))
    if (at > 0 && at + 1 < text.size() && !std::isspace(static_cast<unsigned char>(text[at - 1])) &&
        !std::isspace(static_cast<unsigned char>(text[at + 1])))
      return true;
  return false;
}

// Whether b4 could take LINE for a trailer: its rule, ^\s*(\w\S+):\s (the name is the whole
// first word, up to its last colon), or a line of only "<address>", which b4 joins to the line
// above.
bool reads_as_trailer(std::string_view line) {
  auto start = line.find_first_not_of(" \t");
  if (start == std::string_view::npos) return false;
  auto end = line.find_first_of(" \t", start);
  auto word = line.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
  if (word.front() == '<' && word.back() == '>' && end == std::string_view::npos) return true;
  auto c = static_cast<unsigned char>(word.front());
  bool name = word.size() >= 3 && word.back() == ':' && end != std::string_view::npos &&
              (std::isalnum(c) || c == '_' || c >= 0x80);
  return name;
}

}  // namespace ks::report::detail

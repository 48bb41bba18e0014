#include "kernel/kconfig.hpp"

#include <optional>
#include <set>

#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::kernel {
namespace {

constexpr std::string_view kPrefix = "CONFIG_";
constexpr std::string_view kNotSet = " is not set";

bool is_symbol_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

bool is_symbol(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_symbol_char(c)) return false;
  return true;
}

// symbol/value of one line, or nullopt for a comment or blank line. `valid` is false for
// a line that is neither.
std::optional<std::pair<std::string, std::string>> parse_line(std::string_view raw, bool& valid) {
  valid = true;
  std::string line = trim(raw);
  if (line.empty()) return std::nullopt;
  if (line[0] == '#') {
    // "# CONFIG_FOO is not set"
    std::string_view rest = std::string_view(line).substr(1);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    if (starts_with(rest, kPrefix) && rest.size() > kNotSet.size() &&
        rest.substr(rest.size() - kNotSet.size()) == kNotSet) {
      auto symbol = rest.substr(kPrefix.size(), rest.size() - kPrefix.size() - kNotSet.size());
      if (is_symbol(symbol)) return std::pair{std::string(symbol), std::string("n")};
    }
    return std::nullopt;  // an ordinary comment
  }
  auto eq = line.find('=');
  if (!starts_with(line, kPrefix) || eq == std::string::npos) {
    valid = false;
    return std::nullopt;
  }
  auto symbol = trim(std::string_view(line).substr(kPrefix.size(), eq - kPrefix.size()));
  auto value = trim(std::string_view(line).substr(eq + 1));
  if (!is_symbol(symbol) || value.empty()) {
    valid = false;
    return std::nullopt;
  }
  return std::pair{symbol, value};
}

}  // namespace

std::vector<ConfigLine> parse_fragment(std::string_view text, const std::string& origin) {
  std::vector<ConfigLine> out;
  int number = 0;
  for (auto& line : split(text, '\n')) {
    ++number;
    bool valid = true;
    auto assignment = parse_line(line, valid);
    if (!valid)
      throw UserError("config fragment " + origin + ":" + std::to_string(number) +
                          ": cannot read `" + trim(line) + "`",
                      "write CONFIG_NAME=value or `# CONFIG_NAME is not set`");
    if (assignment)
      out.push_back({assignment->first, assignment->second, origin + ":" + std::to_string(number)});
  }
  return out;
}

ConfigValues parse_config(std::string_view text) {
  ConfigValues out;
  for (auto& line : split(text, '\n')) {
    bool valid = true;
    if (auto assignment = parse_line(line, valid)) out[assignment->first] = assignment->second;
  }
  return out;
}

std::string value_of(const ConfigValues& config, const std::string& symbol) {
  auto it = config.find(symbol);
  return it == config.end() ? "n" : it->second;
}

std::string format_assignment(const std::string& symbol, const std::string& value) {
  if (value == "n") return "# CONFIG_" + symbol + " is not set";
  return "CONFIG_" + symbol + "=" + value;
}

std::vector<ConfigLine> effective_requests(const std::vector<ConfigLine>& requested) {
  std::vector<ConfigLine> out;
  std::set<std::string> seen;
  for (auto it = requested.rbegin(); it != requested.rend(); ++it)
    if (seen.insert(it->symbol).second) out.insert(out.begin(), *it);
  return out;
}

std::string merge_config(std::string_view base, const std::vector<ConfigLine>& requested) {
  auto effective = effective_requests(requested);
  std::set<std::string> replaced;
  for (auto& r : effective) replaced.insert(r.symbol);

  std::string out;
  for (auto& line : split(base, '\n')) {
    bool valid = true;
    auto assignment = parse_line(line, valid);
    if (assignment && replaced.count(assignment->first)) continue;
    out += line;
    out += '\n';
  }
  while (out.size() >= 2 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n')
    out.pop_back();
  out += "\n# ksandwich: config fragments\n";
  for (auto& r : effective) out += format_assignment(r.symbol, r.value) + "\n";
  return out;
}

std::vector<ConfigMismatch> verify_config(const std::vector<ConfigLine>& requested,
                                          const ConfigValues& normalized) {
  std::vector<ConfigMismatch> out;
  bool modules = value_of(normalized, "MODULES") == "y";
  for (auto& r : effective_requests(requested)) {
    auto actual = value_of(normalized, r.symbol);
    if (actual == r.value) continue;
    if (r.value == "m" && actual == "y" && !modules) continue;
    out.push_back({r, actual, {}});
  }
  return out;
}

}  // namespace ks::kernel

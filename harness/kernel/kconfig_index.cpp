#include "kernel/kconfig_index.hpp"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "util/files.hpp"

namespace ks::kernel {
namespace {

// ---------------------------------------------------------------- scanning Kconfig files

int indentation(std::string_view line) {
  int col = 0;
  for (char c : line) {
    if (c == ' ') ++col;
    else if (c == '\t') col = (col / 8 + 1) * 8;
    else break;
  }
  return col;
}

// Drops a trailing "# comment" that is outside quotes.
std::string strip_comment(const std::string& line) {
  bool quoted = false;
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '\\') ++i;
      else if (c == quote) quoted = false;
    } else if (c == '"' || c == '\'') {
      quoted = true;
      quote = c;
    } else if (c == '#') {
      return line.substr(0, i);
    }
  }
  return line;
}

// `"prompt text" if COND` -> COND (empty when unconditional).
std::string condition_after_prompt(const std::string& rest) {
  size_t pos = 0;
  if (!rest.empty() && (rest[0] == '"' || rest[0] == '\'')) {
    char quote = rest[0];
    pos = 1;
    while (pos < rest.size() && rest[pos] != quote) pos += rest[pos] == '\\' ? 2 : 1;
    ++pos;
  }
  auto tail = trim(std::string_view(rest).substr(std::min(pos, rest.size())));
  if (starts_with(tail, "if ") || starts_with(tail, "if\t")) return trim(tail.substr(3));
  return {};
}

std::string unquote(std::string s) {
  s = trim(s);
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
    return s.substr(1, s.size() - 2);
  return s;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
    s.replace(pos, from.size(), to);
  return s;
}

class Scanner {
 public:
  Scanner(const KconfigReader& read, std::string arch) : read_(read), arch_(std::move(arch)) {}

  KconfigIndex run() {
    scan("Kconfig");
    return std::move(index_);
  }

 private:
  enum class Context { none, config, menu, choice, comment };
  struct Frame {
    char kind;  // 'i' if, 'm' menu, 'c' choice
    std::vector<KconfigDependency> deps;
  };

  void scan(const std::string& given) {
    // A name as written ("./K", ".//K") is one file: spellings do not multiply the reads. A
    // patched tree's Kconfig may name anything: only files in the tree, and a bounded number.
    const auto path = std::filesystem::path(given).lexically_normal().string();
    if (path.empty() || path.front() == '/' || path == ".." || starts_with(path, "../")) return;
    if (depth_ > 64 || visited_.size() >= kMaxKconfigFiles || !visited_.insert(path).second) return;
    auto text = read_(path);
    if (!text) return;
    index_.files.push_back(path);
    ++depth_;
    auto lines = split(*text, '\n');
    bool in_help = false;
    int help_indent = -1;
    context_ = Context::none;
    for (size_t i = 0; i < lines.size(); ++i) {
      int number = static_cast<int>(i) + 1;
      std::string line = lines[i];
      if (in_help) {
        if (trim(line).empty()) continue;
        int ind = indentation(line);
        if (help_indent < 0 && ind > 0) {
          help_indent = ind;
          continue;
        }
        if (help_indent >= 0 && ind >= help_indent) continue;
        in_help = false;
      }
      while (!line.empty() && line.back() == '\\' && i + 1 < lines.size()) {
        line.pop_back();
        line += " " + lines[++i];
      }
      auto stmt = trim(strip_comment(line));
      if (stmt.empty()) continue;
      auto space = stmt.find_first_of(" \t");
      std::string keyword = stmt.substr(0, space);
      std::string rest = space == std::string::npos ? "" : trim(stmt.substr(space));
      std::string where = path + ":" + std::to_string(number);
      if (keyword == "help" || keyword == "---help---") {
        in_help = true;
        help_indent = -1;
      } else {
        statement(keyword, rest, where, path);
      }
    }
    --depth_;
    context_ = Context::none;
  }

  void statement(const std::string& keyword, const std::string& rest, const std::string& where,
                 const std::string& path) {
    if (keyword == "config" || keyword == "menuconfig") {
      symbol_ = rest.substr(0, rest.find_first_of(" \t"));
      KconfigDefinition def;
      def.where = where;
      for (auto& f : frames_) {
        def.depends.insert(def.depends.end(), f.deps.begin(), f.deps.end());
        if (f.kind == 'c') def.in_choice = true;
      }
      index_.symbols[symbol_].push_back(std::move(def));
      context_ = Context::config;
    } else if (keyword == "choice") {
      frames_.push_back({'c', {}});
      context_ = Context::choice;
    } else if (keyword == "menu") {
      frames_.push_back({'m', {}});
      context_ = Context::menu;
    } else if (keyword == "if") {
      frames_.push_back({'i', {{rest, "`if` block at " + where}}});
      context_ = Context::none;
    } else if (keyword == "endchoice" || keyword == "endmenu" || keyword == "endif") {
      if (!frames_.empty()) frames_.pop_back();
      context_ = Context::none;
    } else if (keyword == "comment" || keyword == "mainmenu") {
      context_ = Context::comment;
    } else if (keyword == "source" || keyword == "osource" || keyword == "rsource" ||
               keyword == "orsource") {
      auto file = unquote(rest);
      file = replace_all(file, "$(SRCARCH)", arch_);
      file = replace_all(file, "$SRCARCH", arch_);
      if (file.find('$') != std::string::npos || file.find('*') != std::string::npos) return;
      if (keyword[0] == 'r' || keyword[1] == 'r') {
        auto slash = path.rfind('/');
        if (slash != std::string::npos) file = path.substr(0, slash + 1) + file;
      }
      scan(file);
    } else if (keyword == "depends") {
      if (!starts_with(rest, "on")) return;
      KconfigDependency dep{trim(std::string_view(rest).substr(2)), where};
      if (context_ == Context::config) {
        current().depends.push_back(dep);
      } else if ((context_ == Context::menu || context_ == Context::choice) && !frames_.empty()) {
        dep.where = std::string(context_ == Context::menu ? "menu" : "choice") + " at " + where;
        frames_.back().deps.push_back(dep);
      }
    } else if (context_ == Context::config) {
      config_property(keyword, rest, where);
    }
  }

  void config_property(const std::string& keyword, const std::string& rest,
                       const std::string& where) {
    auto& def = current();
    static const std::set<std::string> types{"bool", "tristate", "string", "int", "hex"};
    if (types.count(keyword)) {
      def.type = keyword;
      if (!rest.empty() && (rest[0] == '"' || rest[0] == '\'')) {
        def.has_prompt = true;
        def.prompt_if = condition_after_prompt(rest);
      }
    } else if (keyword == "def_bool" || keyword == "def_tristate") {
      def.type = keyword.substr(4);
    } else if (keyword == "prompt") {
      def.has_prompt = true;
      def.prompt_if = condition_after_prompt(rest);
    } else if (keyword == "select") {
      auto target = rest.substr(0, rest.find_first_of(" \t"));
      std::string condition;
      auto pos = rest.find(" if ");
      if (pos != std::string::npos) condition = trim(rest.substr(pos + 4));
      index_.selected_by[target].push_back({symbol_, condition, where});
    }
  }

  KconfigDefinition& current() { return index_.symbols[symbol_].back(); }

  const KconfigReader& read_;
  std::string arch_;
  KconfigIndex index_;
  std::vector<Frame> frames_;
  std::set<std::string> visited_;
  Context context_ = Context::none;
  std::string symbol_;
  int depth_ = 0;
};

// ---------------------------------------------------------------- expressions

struct Token {
  enum Kind { word, string, macro, op, end } kind;
  std::string text;
};

std::vector<Token> tokenize(const std::string& s) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_' ||
                              s[j] == '-'))
        ++j;
      out.push_back({Token::word, s.substr(i, j - i)});
      i = j;
    } else if (c == '"' || c == '\'') {
      size_t j = i + 1;
      while (j < s.size() && s[j] != c) j += s[j] == '\\' ? 2 : 1;
      out.push_back({Token::string, s.substr(i + 1, std::min(j, s.size()) - i - 1)});
      i = j + 1;
    } else if (c == '$' && i + 1 < s.size() && s[i + 1] == '(') {
      size_t j = i + 2;
      int depth = 1;
      while (j < s.size() && depth > 0) {
        if (s[j] == '(') ++depth;
        if (s[j] == ')') --depth;
        ++j;
      }
      out.push_back({Token::macro, s.substr(i, j - i)});
      i = j;
    } else {
      static const char* two[] = {"&&", "||", "!=", "<=", ">="};
      std::string op(1, c);
      for (auto* t : two)
        if (s.compare(i, 2, t) == 0) op = t;
      out.push_back({Token::op, op});
      i += op.size();
    }
  }
  out.push_back({Token::end, ""});
  return out;
}

class Evaluator {
 public:
  Evaluator(const std::string& expr, const ConfigValues& config)
      : tokens_(tokenize(expr)), config_(config) {}

  int run() {
    int v = or_expr();
    if (peek().kind != Token::end) throw std::runtime_error("trailing tokens");
    return v;
  }

 private:
  const Token& peek() const { return tokens_[pos_]; }
  bool accept(const std::string& op) {
    if (peek().kind == Token::op && peek().text == op) {
      ++pos_;
      return true;
    }
    return false;
  }

  int or_expr() {
    int v = and_expr();
    while (accept("||")) v = std::max(v, and_expr());
    return v;
  }
  int and_expr() {
    int v = unary();
    while (accept("&&")) v = std::min(v, unary());
    return v;
  }
  int unary() {
    if (accept("!")) return 2 - unary();
    return primary();
  }
  int primary() {
    if (accept("(")) {
      int v = or_expr();
      if (!accept(")")) throw std::runtime_error("missing )");
      return v;
    }
    Token left = atom();
    for (const char* op : {"=", "!=", "<=", ">=", "<", ">"}) {
      if (accept(op)) {
        Token right = atom();
        if (left.kind == Token::macro || right.kind == Token::macro) return 2;
        return compare(text_of(left), op, text_of(right)) ? 2 : 0;
      }
    }
    return tristate_of(left);
  }
  Token atom() {
    Token t = peek();
    if (t.kind == Token::end || t.kind == Token::op) throw std::runtime_error("operand expected");
    ++pos_;
    return t;
  }
  std::string text_of(const Token& t) const {
    if (t.kind == Token::string) return t.text;
    if (t.text == "y" || t.text == "n" || t.text == "m") return t.text;
    auto it = config_.find(t.text);
    if (it != config_.end()) return unquote(it->second);
    bool symbol_like = !t.text.empty() && std::isupper(static_cast<unsigned char>(t.text[0]));
    return symbol_like ? "n" : t.text;  // an unset symbol compares as n; a number as itself
  }
  int tristate_of(const Token& t) const {
    if (t.kind == Token::macro) return 2;
    auto v = text_of(t);
    return v == "y" ? 2 : v == "m" ? 1 : 0;
  }
  static bool compare(const std::string& a, const std::string& op, const std::string& b) {
    char* end_a = nullptr;
    char* end_b = nullptr;
    long long na = std::strtoll(a.c_str(), &end_a, 0);
    long long nb = std::strtoll(b.c_str(), &end_b, 0);
    bool numeric = !a.empty() && !b.empty() && *end_a == '\0' && *end_b == '\0';
    int c = numeric ? (na < nb ? -1 : na > nb ? 1 : 0) : a.compare(b);
    if (op == "=") return c == 0;
    if (op == "!=") return c != 0;
    if (op == "<") return c < 0;
    if (op == "<=") return c <= 0;
    if (op == ">") return c > 0;
    return c >= 0;
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  const ConfigValues& config_;
};

// "SHMEM=n, MMU=y": the values of the symbols an expression names.
std::string symbol_values(const std::string& expr, const ConfigValues& config) {
  std::vector<std::string> parts;
  std::set<std::string> seen;
  for (auto& t : tokenize(expr)) {
    if (t.kind != Token::word || t.text == "y" || t.text == "n" || t.text == "m") continue;
    if (!std::isupper(static_cast<unsigned char>(t.text[0])) || !seen.insert(t.text).second)
      continue;
    parts.push_back(t.text + "=" + value_of(config, t.text));
  }
  return join(parts, ", ");
}

std::string describe_dependency(const KconfigDependency& d, const ConfigValues& config) {
  std::string out = "depends on " + d.expr + " (" + d.where + ")";
  auto values = symbol_values(d.expr, config);
  if (!values.empty()) out += ", and " + values;
  return out;
}

}  // namespace

KconfigIndex scan_kconfig(const KconfigReader& read, const std::string& arch) {
  return Scanner(read, arch).run();
}

int evaluate_kconfig_expr(const std::string& expr, const ConfigValues& config) {
  try {
    return Evaluator(expr, config).run();
  } catch (const std::exception&) {
    return 2;  // cannot parse: never blame what we do not understand
  }
}

std::string explain(const KconfigIndex& index, const ConfigValues& config,
                    const std::string& symbol, const std::string& requested,
                    const std::string& actual) {
  auto it = index.symbols.find(symbol);
  if (it == index.symbols.end())
    return "no symbol " + symbol + " in this kernel's Kconfig (misspelt, or not in this version)";
  const auto& defs = it->second;

  if (requested != "n") {
    std::vector<std::string> reasons;
    std::set<std::string> seen;
    int needed = requested == "m" ? 1 : 2;
    for (auto& def : defs)
      for (auto& dep : def.depends)
        if (evaluate_kconfig_expr(dep.expr, config) < needed && seen.insert(dep.expr).second)
          reasons.push_back(describe_dependency(dep, config));
    if (!reasons.empty()) return join(reasons, "; ");

    bool prompt = false, prompt_visible = false;
    std::string hidden_by;
    for (auto& def : defs) {
      if (!def.has_prompt) continue;
      prompt = true;
      if (def.prompt_if.empty() || evaluate_kconfig_expr(def.prompt_if, config) > 0)
        prompt_visible = true;
      else
        hidden_by = "its prompt (" + def.where + ") is hidden unless " + def.prompt_if + ", and " +
                    symbol_values(def.prompt_if, config);
    }
    if (!prompt)
      return "has no prompt (" + defs.front().where +
             "): a fragment cannot set it, only a `select` or its default can";
    if (!prompt_visible) return hidden_by;
    for (auto& def : defs)
      if (def.in_choice)
        return "is a member of a choice (" + def.where +
               "): another member was chosen; set that one to n";
    return "Kconfig set it to " + actual + "; see its default and range at " + defs.front().where;
  }

  std::vector<std::string> selectors;
  if (auto sel = index.selected_by.find(symbol); sel != index.selected_by.end())
    for (auto& s : sel->second) {
      auto v = value_of(config, s.by);
      if (v == "n" || (!s.condition.empty() && evaluate_kconfig_expr(s.condition, config) == 0))
        continue;
      selectors.push_back(s.by + "=" + v + " (" + s.where + ")");
    }
  if (!selectors.empty()) return "forced on: selected by " + join(selectors, ", ");
  bool prompt = false;
  for (auto& def : defs) prompt = prompt || def.has_prompt;
  if (!prompt)
    return "has no prompt (" + defs.front().where + "): its default turns it on and a fragment "
           "cannot turn it off";
  return "Kconfig set it to " + actual + "; see its definition at " + defs.front().where;
}

}  // namespace ks::kernel

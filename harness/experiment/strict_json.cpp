#include "experiment/strict_json.hpp"

#include <set>
#include <vector>

#include "util/error.hpp"

namespace ks::experiment {
namespace {

using nlohmann::json;

const char* kTextHint = "an experiment file is UTF-8 JSON text; `jq . FILE` shows what a reader sees";

// One level of nesting while parsing, for the JSON pointer of the current place.
struct Frame {
  bool object = false;
  std::set<std::string> keys;
  std::string key;   // object: the key whose value is being read
  size_t count = 0;  // array: elements started so far
};

std::string escape_pointer_token(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else if (c == '\0') out += "\\u0000";
    else out += c;
  }
  return out;
}

std::string pointer(const std::vector<Frame>& stack) {
  std::string p;
  for (auto& f : stack)
    p += "/" + (f.object ? escape_pointer_token(f.key) : std::to_string(f.count == 0 ? 0 : f.count - 1));
  return p.empty() ? "/" : p;
}

void check_tree(const json& j, const std::string& origin, const std::string& at, int depth, int max_depth) {
  if (j.is_string() && j.get_ref<const std::string&>().find('\0') != std::string::npos)
    throw UserError(origin + ": " + (at.empty() ? "/" : at) + ": the string holds a NUL character (\\u0000)",
                    "remove it: names and paths end at a NUL for the kernel and for C tools");
  if (!j.is_structured()) return;
  if (depth >= max_depth)
    throw UserError(origin + ": " + (at.empty() ? "/" : at) + ": nested deeper than " +
                        std::to_string(max_depth) + " levels",
                    "an experiment is a few levels deep; check the file is the one you meant");
  if (j.is_object()) {
    for (auto& [k, v] : j.items()) {
      if (k.find('\0') != std::string::npos)
        throw UserError(origin + ": " + (at.empty() ? "/" : at) + ": a key holds a NUL character (\\u0000)",
                        "remove it: keys are names");
      check_tree(v, origin, at + "/" + escape_pointer_token(k), depth + 1, max_depth);
    }
  } else {
    size_t i = 0;
    for (auto& v : j) check_tree(v, origin, at + "/" + std::to_string(i++), depth + 1, max_depth);
  }
}

}  // namespace

void check_json_text(std::string_view text, const std::string& origin, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\0')
      throw UserError(origin + " holds a NUL byte at offset " + std::to_string(i) +
                          ", so readers disagree on where it ends",
                      kTextHint);
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth)
        throw UserError(origin + " nests arrays or objects deeper than " + std::to_string(max_depth) +
                            " levels (at offset " + std::to_string(i) + ")",
                        "an experiment is a few levels deep; check the file is the one you meant");
    } else if (c == '}' || c == ']') {
      if (depth > 0) --depth;
    }
  }
}

std::string json_error_text(const nlohmann::json::exception& err) {
  std::string why = err.what();
  if (why.starts_with("[json.exception.") && why.find("] ") != std::string::npos) why.erase(0, why.find("] ") + 2);
  // Where, never what: the parser's "last read" is the file's own text, which a link root
  // followed may have led to a file of root's alone (sixty-sixth attack: gather printed the
  // first line of one through a link in a series directory root had copied), and it can be
  // megabytes long. Its line and column stay.
  if (auto at = why.find("; last read: "); at != std::string::npos) why.erase(at);
  return why;
}

namespace {

// The checks of parse_json_strict as the parser's events go by, with no tree built: each
// event costs the same however large the document (nlohmann's callback parser rescans an
// array each time an object in it closes, quadratic in its length), and a document of more
// than kMaxJsonValues values is refused before any memory is spent on it.
class StrictChecker : public json::json_sax_t {
 public:
  explicit StrictChecker(const std::string& origin) : origin_(origin) {}

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(json::number_integer_t) override { return value(); }
  bool number_unsigned(json::number_unsigned_t) override { return value(); }
  bool number_float(json::number_float_t, const std::string&) override { return value(); }
  bool binary(json::binary_t&) override { return value(); }
  bool string(std::string& s) override {
    value();
    if (s.find('\0') != std::string::npos)
      throw UserError(origin_ + ": " + pointer(stack_) + ": the string holds a NUL character (\\u0000)",
                      "remove it: names and paths end at a NUL for the kernel and for C tools");
    return true;
  }
  bool start_object(std::size_t) override { return open(true); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(std::string& key) override {
    auto& top = stack_.back();
    top.key = key;
    if (key.find('\0') != std::string::npos)
      throw UserError(origin_ + ": " + pointer(stack_) + ": the key holds a NUL character (\\u0000)",
                      "remove it: keys are names");
    if (!top.keys.insert(key).second)
      throw UserError(origin_ + ": " + pointer(stack_) + ": the key \"" + key + "\" appears twice in the same object",
                      "keep one of them: JSON tools disagree on which copy wins");
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& err) override {
    throw UserError(origin_ + " is not valid JSON: " + json_error_text(err),
                    "fix the syntax (a JSON linter such as `jq . FILE` shows where)");
  }

 private:
  bool value() {
    if (!stack_.empty() && !stack_.back().object) ++stack_.back().count;
    if (++values_ > kMaxJsonValues)
      throw UserError(origin_ + " holds more than " + std::to_string(kMaxJsonValues) + " JSON values",
                      "no experiment or bundle is this large; check the file is the one you meant");
    return true;
  }
  bool open(bool object) {
    value();
    stack_.push_back(Frame{object, {}, {}, 0});
    return true;
  }
  bool close() {
    if (!stack_.empty()) stack_.pop_back();
    return true;
  }

  const std::string& origin_;
  std::vector<Frame> stack_;
  size_t values_ = 0;
};

}  // namespace

json parse_json_strict(std::string_view text, const std::string& origin, int max_depth) {
  check_json_text(text, origin, max_depth);
  StrictChecker checker(origin);
  try {
    json::sax_parse(text.begin(), text.end(), &checker);
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& err) {
    throw UserError(origin + " is not valid JSON: " + json_error_text(err),
                    "fix the syntax (a JSON linter such as `jq . FILE` shows where)");
  } catch (const json::out_of_range& err) {
    // The parser's own refusal of a number no double holds (e.g. 1e999): bad input too.
    throw UserError(origin + " holds a number out of range: " + json_error_text(err),
                    "write numbers within the range the schema states");
  }
}

void check_json_tree(const json& j, const std::string& origin, int max_depth) {
  check_tree(j, origin, "", 0, max_depth);
}

}  // namespace ks::experiment

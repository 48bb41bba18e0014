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
  return why;
}

json parse_json_strict(std::string_view text, const std::string& origin, int max_depth) {
  check_json_text(text, origin, max_depth);
  std::vector<Frame> stack;
  auto element_starts = [&] {
    if (!stack.empty() && !stack.back().object) ++stack.back().count;
  };
  json::parser_callback_t callback = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        element_starts();
        stack.push_back(Frame{event == json::parse_event_t::object_start, {}, {}, 0});
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!stack.empty()) stack.pop_back();
        break;
      case json::parse_event_t::key: {
        auto key = parsed.get<std::string>();
        auto& top = stack.back();
        top.key = key;
        if (key.find('\0') != std::string::npos)
          throw UserError(origin + ": " + pointer(stack) + ": the key holds a NUL character (\\u0000)",
                          "remove it: keys are names");
        if (!top.keys.insert(key).second)
          throw UserError(origin + ": " + pointer(stack) + ": the key \"" + key +
                              "\" appears twice in the same object",
                          "keep one of them: JSON tools disagree on which copy wins");
        break;
      }
      case json::parse_event_t::value:
        element_starts();
        if (parsed.is_string() && parsed.get_ref<const std::string&>().find('\0') != std::string::npos)
          throw UserError(origin + ": " + pointer(stack) + ": the string holds a NUL character (\\u0000)",
                          "remove it: names and paths end at a NUL for the kernel and for C tools");
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), callback);
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

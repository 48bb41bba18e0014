#pragma once
// JSON from other people, read strictly. nlohmann/json accepts things a hostile or careless
// file can use to mean two things at once, or to crash the reader:
// - a raw NUL byte (what follows it may be ignored by one reader and not by another),
// - "\u0000" inside a key or a string (C APIs cut the name short there),
// - the same key twice in one object (JSON tools disagree on which copy wins),
// - nesting so deep that a recursive reader overflows its stack.
// These refuse all of them with a UserError naming ORIGIN, the place and what to do.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace ks::experiment {

constexpr int kMaxJsonDepth = 64;
// Values (objects, arrays, strings, numbers, ...) in one document: a 16 MiB bundle of real
// rows holds about a million; 64 MiB of "{}," would take gigabytes as a tree.
constexpr size_t kMaxJsonValues = 4'000'000;

// Throws UserError when TEXT nests arrays/objects deeper than MAX_DEPTH or holds a raw NUL
// byte. Reads the text only (no DOM), so it is safe on any input; use it before handing a
// file to a parser that has no depth limit.
void check_json_text(std::string_view text, const std::string& origin, int max_depth = kMaxJsonDepth);

// The JSON library's message without its tag ("[json.exception.parse_error.101] "): what a
// user is shown after the file's name.
std::string json_error_text(const nlohmann::json::exception& err);

// check_json_text, then a parse that refuses duplicate keys, NUL characters in keys and
// strings, and more than kMaxJsonValues values, in time linear in the text. Malformed JSON is
// a UserError too (the parser's message and where).
nlohmann::json parse_json_strict(std::string_view text, const std::string& origin,
                                 int max_depth = kMaxJsonDepth);

// For JSON that was parsed elsewhere (e.g. the experiment kept in a bundle): refuses NUL
// characters in keys and strings and nesting deeper than MAX_DEPTH. Never recurses deeper
// than MAX_DEPTH + 1.
void check_json_tree(const nlohmann::json& j, const std::string& origin, int max_depth = kMaxJsonDepth);

}  // namespace ks::experiment

#pragma once
// Small helpers for reading rendered reports in tests.
#include <sstream>
#include <string>
#include <vector>

namespace ks::test {

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The first line that starts with PREFIX, or "" when there is none.
inline std::string line_starting(const std::string& text, const std::string& prefix) {
  for (auto& line : lines_of(text))
    if (line.rfind(prefix, 0) == 0) return line;
  return "";
}

// Whitespace runs (including wrapped line breaks) collapsed to one space, so sentences can
// be matched whatever the wrapping.
inline std::string flat(const std::string& text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\t') {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

inline size_t count_of(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + needle.size()))
    ++n;
  return n;
}

}  // namespace ks::test

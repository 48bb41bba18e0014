#include "util/message_id.hpp"

#include <algorithm>

#include "util/files.hpp"

namespace ks {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "%40" -> "@": lore's links escape a Message-ID's special characters.
std::string percent_decoded(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_digit(s[i + 1]) >= 0 && hex_digit(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> message_ids(std::string_view value) {
  std::vector<std::string> ids;
  for (size_t open = value.find('<'); open != std::string_view::npos; open = value.find('<', open + 1)) {
    auto close = value.find('>', open + 1);
    if (close == std::string_view::npos) break;
    if (close > open + 1) ids.emplace_back(value.substr(open + 1, close - open - 1));
    open = close;
  }
  return ids;
}

std::string bare_message_id(std::string_view given) {
  auto id = trim(given);
  if (starts_with(id, "https://") || starts_with(id, "http://")) {
    auto path = id.substr(id.find("//") + 2);
    path = path.substr(0, path.find_first_of("?#"));
    std::string found;
    for (auto& part : split(path, '/'))
      if (auto decoded = percent_decoded(part); found.empty() && decoded.find('@') != std::string::npos) found = decoded;
    id = trim(found);
  }
  if (starts_with(id, "id:")) id = trim(id.substr(3));
  if (auto ids = message_ids(id); !ids.empty()) id = ids.front();
  const bool one_word = std::all_of(id.begin(), id.end(), [](char c) { return c > 0x20 && c < 0x7f && c != '<' && c != '>'; });
  return one_word && id.find('@') != std::string::npos && id.size() <= 900 ? id : std::string();
}

}  // namespace ks

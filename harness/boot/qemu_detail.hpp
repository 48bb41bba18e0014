#pragma once
// Small helpers the QEMU backend (qemu.cpp) and its pure guest side (qemu_guest.cpp) share.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "boot/qemu.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::boot::detail {

using nlohmann::json;

template <typename T>
inline void append(std::vector<T>& to, const std::vector<T>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

inline std::string string_field(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

inline std::optional<double> number_field(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

inline std::string shell_line(const std::vector<std::string>& argv) {
  std::vector<std::string> quoted;
  for (auto& word : argv) quoted.push_back(shell_quote(word));
  return join(quoted, " ");
}

inline void require(bool ok, const std::string& what, const std::string& hint) {
  if (!ok) throw UserError(what, hint);
}

}  // namespace ks::boot::detail

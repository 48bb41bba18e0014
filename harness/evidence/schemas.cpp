#include "evidence/schemas.hpp"

#include <stdexcept>
#include <string>

namespace ks::evidence {

std::string_view schema_text(std::string_view name) {
  for (auto& f : schema_files())
    if (f.name == name) return f.text;
  throw std::out_of_range("no schema " + std::string(name) + " is embedded in this binary");
}

}  // namespace ks::evidence

#pragma once
// The JSON Schemas of results-schema/, compiled into the binary (embed_schemas.cmake), so
// `validate` and `report` check a bundle on a machine without the source tree.
#include <span>
#include <string_view>

namespace ks::evidence {

struct SchemaFile {
  std::string_view name;  // file name in results-schema/, e.g. "bundle.schema.json"
  std::string_view text;  // its contents, byte for byte
};

std::span<const SchemaFile> schema_files();

// The text of results-schema/NAME; throws std::out_of_range for a name not embedded.
std::string_view schema_text(std::string_view name);

}  // namespace ks::evidence

// The schemas compiled into the binary are results-schema/*.json byte for byte, every one of
// them: validate and report check bundles against these when the source tree is absent.
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>

#include "evidence/schemas.hpp"
#include "support/paths.hpp"
#include "util/files.hpp"

using namespace ks;

TEST_CASE("embedded schemas: every results-schema/*.json, byte for byte") {
  std::set<std::string> on_disk, embedded;
  for (auto& entry : std::filesystem::directory_iterator(test::source_dir() / "results-schema"))
    if (entry.path().extension() == ".json") on_disk.insert(entry.path().filename().string());
  for (auto& f : evidence::schema_files()) {
    embedded.insert(std::string(f.name));
    INFO(f.name);
    CHECK(f.text == read_file(test::source_dir() / "results-schema" / std::string(f.name)));
  }
  CHECK(embedded == on_disk);
  CHECK(on_disk.count("bundle.schema.json"));
  CHECK(evidence::schema_text("experiment.schema.json").find("2020-12") != std::string_view::npos);
  CHECK_THROWS_AS(evidence::schema_text("nope.json"), std::out_of_range);
}

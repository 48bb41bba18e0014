// The backends are one table (experiment/backends.hpp) plus how each is made
// (boot::make_backend): the two, and both schemas' enums, name the same backends, so a new
// backend cannot be half added.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "boot/backend.hpp"
#include "evidence/schemas.hpp"
#include "experiment/backends.hpp"
#include "experiment/experiment.hpp"
#include "util/error.hpp"

using nlohmann::json;
namespace ex = ks::experiment;

TEST_CASE("backend table: every backend the rules name is made, under its own name") {
  REQUIRE(ex::backend_names() == std::vector<std::string>{"host", "qemu", "baremetal"});
  for (auto& name : ex::backend_names()) {
    auto backend = ks::boot::make_backend(name, {});
    CHECK(backend->name() == name);
  }
  CHECK_THROWS_AS(ex::backend_rules("vmware"), ks::UserError);
}

TEST_CASE("backend table: the experiment and bundle schemas name the same backends") {
  auto names = ex::backend_names();
  auto experiment = json::parse(ks::evidence::schema_text("experiment.schema.json"));
  CHECK(experiment["properties"]["backend"]["enum"].get<std::vector<std::string>>() == names);
  auto bundle = json::parse(ks::evidence::schema_text("bundle.schema.json"));
  CHECK(bundle["properties"]["backend"]["enum"].get<std::vector<std::string>>() == names);
}

TEST_CASE("backend table: a storage kind the backend cannot make is refused when parsed, with its hint") {
  auto experiment = [](const std::string& backend, const std::string& kind) {
    return json{{"name", "t"},
                {"backend", backend},
                {"storage", {{"kind", kind}}},
                {"arms", {{"control", json::object()}, {"patched", json::object()}}},
                {"workloads", {{{"name", "clone"}, {"ops", 100}}}}};
  };
  for (auto& rules : ex::backend_table()) {
    for (auto kind : {"auto", "brd", "zram", "loop", "nvme"}) {
      bool allowed = std::find(rules.storage_kinds.begin(), rules.storage_kinds.end(), kind) != rules.storage_kinds.end();
      INFO(rules.name << " " << kind);
      if (allowed) {
        CHECK_NOTHROW(ex::parse(experiment(rules.name, kind)));
      } else {
        try {
          ex::parse(experiment(rules.name, kind));
          FAIL("parsed");
        } catch (const ks::UserError& e) {
          CHECK_THAT(e.what(), Catch::Contains("/storage/kind") && Catch::Contains("not available on the " + rules.name));
          CHECK(e.hint() == rules.storage_hint);
        }
      }
    }
  }
}

TEST_CASE("backend table: a backend's own section is kept for it, and refused for the others") {
  json e{{"name", "t"},
         {"backend", "baremetal"},
         {"baremetal", {{"results_device", "/dev/sdb2"}}},
         {"arms", {{"control", json::object()}, {"patched", json::object()}}},
         {"workloads", {{{"name", "clone"}, {"ops", 100}}}}};
  CHECK(ex::parse(e).backend_section == e["baremetal"]);
  e["backend"] = "qemu";
  CHECK_THROWS_WITH(ex::parse(e), Catch::Contains("baremetal"));
  e["backend"] = "baremetal";
  e["baremetal"] = "/dev/sdb2";
  CHECK_THROWS_WITH(ex::parse(e), Catch::Contains("/baremetal") && Catch::Contains("must be an object"));
}

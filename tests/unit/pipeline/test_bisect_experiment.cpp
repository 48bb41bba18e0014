// The experiment a bisect step runs: the user's settings, the confirm scheme, the good
// commit as control and the candidate commit as patched, and it parses.
#include <catch2/catch.hpp>

#include "experiment/experiment.hpp"
#include "pipeline/bisect.hpp"

using nlohmann::json;

TEST_CASE("bisect: a step's experiment compares the candidate commit against good") {
  json user = {{"name", "mine"},
               {"backend", "qemu"},
               {"scheme", "screen"},
               {"order", {"control", "patched", "control"}},
               {"rounds", 4},
               {"source", {{"kind", "git"}, {"path", "linux"}, {"commit", "HEAD"}}},
               {"arms", {{"control", {{"cmdline", {"mitigations=off"}}, {"patches", {"x.patch"}}}},
                         {"patched", {{"patches", {"y.patch"}}}}}},
               {"workloads", {{{"name", "clone"}, {"ops", 100}}}}};
  auto e = ks::pipeline::step_experiment(user, "/src/linux", "0123abcd", "4567ef01");
  CHECK(e["source"] == json({{"kind", "git"}, {"path", "/src/linux"}, {"commit", "0123abcd"}}));
  CHECK(e["scheme"] == "confirm");
  CHECK_FALSE(e.contains("order"));
  CHECK(e["rounds"] == 4);
  // The control arm's own settings stay on both arms; its patches go: good is the commit as it is.
  CHECK(e["arms"]["control"] == json({{"cmdline", {"mitigations=off"}}}));
  CHECK(e["arms"]["patched"] ==
        json({{"cmdline", {"mitigations=off"}}, {"commit", "4567ef01"}}));
  auto parsed = ks::experiment::parse(e);
  CHECK(parsed.scheme == "confirm");
  CHECK(parsed.arms.at("patched").commit == "4567ef01");
  CHECK(parsed.arms.at("patched").patches.empty());
}

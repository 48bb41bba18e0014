#include <catch2/catch.hpp>

#include "machine/machine.hpp"

TEST_CASE("environment differences name the fields that should match") {
  nlohmann::json a{{"cpu", 1}, {"clocksource", "tsc"}, {"governor", "performance"}, {"loadavg", "0.1"}};
  auto b = a;
  b["loadavg"] = "0.9";  // moves by nature: not a difference
  CHECK(ks::machine::environment_differences(a, b).empty());
  b["governor"] = "powersave";
  auto d = ks::machine::environment_differences(a, b);
  REQUIRE(d.size() == 1);
  CHECK(d[0] == "governor: \"performance\" vs \"powersave\"");
}

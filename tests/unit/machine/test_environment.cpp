#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>

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

TEST_CASE("tsc-early and tsc are the same counter, another clock source is a difference") {
  nlohmann::json a{{"clocksource", "tsc"}}, b{{"clocksource", "tsc-early"}};
  CHECK(ks::machine::environment_differences(a, b).empty());
  b["clocksource"] = "hpet";
  REQUIRE(ks::machine::environment_differences(a, b).size() == 1);
}

// Reads /sys (and, where cpufreq exists, writes back the governor already in force).
TEST_CASE("a governor setting says what it did, and changes nothing when it cannot") {
  ks::machine::GovernorSetting untouched(0, "");
  CHECK(untouched.describe().is_null());

  const std::string path = "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor";
  std::ifstream current_file(path);
  std::string current;
  if (!(current_file >> current)) {
    ks::machine::GovernorSetting g(0, "performance");
    CHECK(g.describe()["requested"] == "performance");
    CHECK(g.describe()["set"] == false);
    CHECK_THAT(g.describe()["reason"].get<std::string>(), Catch::Contains("no cpufreq"));
    return;
  }
  if (geteuid() != 0) return;  // cannot write the governor; the read side was checked above
  {
    ks::machine::GovernorSetting same(0, current);
    CHECK(same.describe()["set"] == true);
    CHECK(same.describe()["value"] == current);
  }
  std::ifstream after(path);
  std::string restored;
  after >> restored;
  CHECK(restored == current);
}

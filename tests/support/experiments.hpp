#pragma once
// The smallest experiment the parser accepts, and the message a refused one gets: shared by
// the experiment tests so every test starts from the same file.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "experiment/experiment.hpp"
#include "util/error.hpp"

namespace ks::test {

inline nlohmann::json minimal_experiment() {
  return nlohmann::json::parse(R"({"name": "t", "arms": {"control": {}, "patched": {}},
                                   "workloads": [{"name": "clone"}]})");
}

// The message of the UserError that parsing J throws (which must carry a hint saying what
// to write instead); "(no error)" when it parses.
inline std::string parse_error_of(const nlohmann::json& j) {
  try {
    experiment::parse(j);
  } catch (const UserError& e) {
    CHECK_FALSE(e.hint().empty());
    return e.what();
  }
  return "(no error)";
}

}  // namespace ks::test

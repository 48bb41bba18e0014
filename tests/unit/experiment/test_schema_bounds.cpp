// One definition of what an experiment may say: every numeric bound the schema states is
// the parser's bound too. For each bound, one value just inside must parse and one just
// outside must be refused, naming the field; so the schema and the parser cannot drift.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "experiment/experiment.hpp"
#include "support/paths.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

using nlohmann::json;

namespace {

struct Field {
  std::string pointer;  // where it sits in an experiment, arrays at index 0
  json schema;
};

const json& resolve(const json& root, const json& node) {
  if (node.contains("$ref")) {
    auto ref = node["$ref"].get<std::string>();
    REQUIRE(ks::starts_with(ref, "#/"));
    return root[json::json_pointer(ref.substr(1))];
  }
  return node;
}

bool is_numeric(const json& node) {
  if (!node.contains("type")) return false;
  auto& t = node["type"];
  return t == "integer" || t == "number";
}

void collect(const json& root, const json& raw, const std::string& pointer, std::vector<Field>& out) {
  const json& node = resolve(root, raw);
  if (is_numeric(node)) out.push_back({pointer, node});
  if (node.contains("properties"))
    for (auto& [key, sub] : node["properties"].items()) collect(root, sub, pointer + "/" + key, out);
  if (node.contains("items") && node["items"].is_object()) collect(root, node["items"], pointer + "/0", out);
}

json minimal() {
  return json::parse(R"({"name": "t", "arms": {"control": {}, "patched": {}},
                         "workloads": [{"name": "clone"}]})");
}

// What else a field needs to be meaningful: the workload it applies to, or a partner field
// whose default would make a value at the edge invalid for another reason.
json base_for(const std::string& pointer) {
  auto j = minimal();
  static const std::map<std::string, std::string> workload_of = {
      {"ops", "clone"}, {"range_bytes", "clone"}, {"iodepth", "dio-randwrite"}, {"jobs", "dio-randwrite"},
      {"file_size_mib", "dio-randwrite"}, {"runtime_s", "dio-randwrite"}, {"ios", "dio-randwrite"}, {"block_kib", "buffered-write"},
      {"size_mib", "buffered-write"}};
  const std::string w = "/workloads/0/";
  if (ks::starts_with(pointer, w)) {
    auto key = pointer.substr(w.size());
    REQUIRE(workload_of.count(key));
    j["workloads"][0]["name"] = workload_of.at(key);
    if (key == "block_kib") j["workloads"][0]["size_mib"] = 1024;  // a whole number of blocks at either edge
  }
  if (pointer == "/max_blocks") j["min_blocks"] = 3;
  if (pointer == "/min_blocks") j["max_blocks"] = 100;
  if (pointer == "/claim/parallel_cpus")  // what a claim needs beside it
    for (auto key : {"thread", "figure", "needs"}) j["claim"][key] = "x";
  return j;
}

std::string error_of(const json& j) {
  try {
    ks::experiment::parse(j);
  } catch (const ks::UserError& e) {
    return e.what();
  }
  return "(no error)";
}

void check_value(const std::string& pointer, const json& value, bool accepted) {
  auto j = base_for(pointer);
  j[json::json_pointer(pointer)] = value;
  INFO(pointer << " = " << value.dump() << (accepted ? " must be accepted" : " must be refused"));
  auto error = error_of(j);
  if (accepted) CHECK(error == "(no error)");
  else CHECK_THAT(error, Catch::Contains("experiment: " + pointer + ":"));
}

// value as JSON: integers stay integers (uint64 for the large ones), numbers stay doubles.
json as_json(bool integer, long double v) {
  if (!integer) return static_cast<double>(v);
  if (v < 0) return static_cast<int64_t>(v);
  return static_cast<uint64_t>(v);
}

}  // namespace

TEST_CASE("schema and parser agree on every numeric bound") {
  auto schema = json::parse(ks::read_file(ks::test::source_dir() / "results-schema/experiment.schema.json"));
  std::vector<Field> fields;
  collect(schema, schema, "", fields);
  REQUIRE(fields.size() >= 20);
  int checked = 0;
  for (auto& [pointer, node] : fields) {
    INFO(pointer);
    const bool integer = node["type"] == "integer";
    // Every integer has a maximum, so nothing can wrap on the way into a fixed-width field.
    if (integer) CHECK(node.contains("maximum"));
    long double step = integer ? (node.contains("multipleOf") ? node["multipleOf"].get<long double>() : 1) : 0;
    if (node.contains("minimum")) {
      long double m = node["minimum"].get<long double>();
      check_value(pointer, as_json(integer, m), true);
      check_value(pointer, integer ? as_json(true, m - step) : json(static_cast<double>(m) - 1e-6), false);
      ++checked;
    }
    if (node.contains("exclusiveMinimum")) {
      long double m = node["exclusiveMinimum"].get<long double>();
      check_value(pointer, integer ? as_json(true, m + step) : json(static_cast<double>(m) + 1e-6), true);
      check_value(pointer, as_json(integer, m), false);
      ++checked;
    }
    if (node.contains("maximum")) {
      long double m = node["maximum"].get<long double>();
      check_value(pointer, as_json(integer, m), true);
      check_value(pointer, integer ? as_json(true, m + step) : json(static_cast<double>(m) * (1 + 1e-9) + 1e-6),
                  false);
      ++checked;
    }
    if (integer) {
      // Integers are integers: half a step above the minimum is refused, not rounded.
      long double lo = node.contains("minimum") ? node["minimum"].get<long double>() : 0;
      check_value(pointer, json(static_cast<double>(lo) + 0.5), false);
    }
  }
  CHECK(checked >= 35);
}

#pragma once
// `ksandwich compare A.json B.json`: the same analysis across two bundles of the same
// workloads (last night's and tonight's). A's points play control, B's play patched.
// Pure: bundles in, a comparison bundle out (the reports render it like any bundle).
#include <optional>
#include <string>

#include "evidence/bundle.hpp"

namespace ks::pipeline {

struct CompareOptions {
  std::string arm = "patched";  // which arm of each bundle to compare: control | patched | all
  // What counts as material; absent: the runs' own gates.material_pct (refused when the two
  // runs disagree), so that compare judges as `run` judged them.
  std::optional<double> material_pct;
  uint64_t seed = 1;
  // Compare bundles whose environments differ (environment_changes); the differences go to
  // the comparison's extra.environment_changes and the report shows them at the top.
  bool allow_environment_change = false;
};

// One fact two bundles must share to be comparable (CPU model, backend, kernel config, ...).
// `machine` marks the facts of the machine itself, which make its fingerprint.
struct EnvironmentFact {
  std::string name;
  std::string value;  // empty: the bundle does not say
  bool machine = false;
};

// The facts of B's environment that matter for comparing ARM's points (control | patched |
// all: the kernel config of each arm compared).
std::vector<EnvironmentFact> environment_of(const evidence::Bundle& b, const std::string& arm);

struct EnvironmentChange {
  std::string name, before, after;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(EnvironmentChange, name, before, after)

// Facts both bundles state and that differ; a fact one bundle does not state is not
// counted (older bundles).
std::vector<EnvironmentChange> environment_changes(const evidence::Bundle& before,
                                                   const evidence::Bundle& after, const std::string& arm);

// A short stable identity of the machine a bundle was measured on: the first 16 hex digits
// of the SHA-256 of its machine facts.
std::string machine_fingerprint(const evidence::Bundle& b);

// Throws UserError when the bundles do not measure the same workloads the same way, or
// (without allow_environment_change) were measured in different environments.
evidence::Bundle compare_bundles(const evidence::Bundle& before, const evidence::Bundle& after,
                                 const CompareOptions& options);

}  // namespace ks::pipeline

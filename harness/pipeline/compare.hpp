#pragma once
// `ksandwich compare A.json B.json`: the same analysis across two bundles of the same
// workloads (last night's and tonight's). A's points play control, B's play patched.
// Pure: bundles in, a comparison bundle out (the reports render it like any bundle).
#include <string>

#include "evidence/bundle.hpp"

namespace ks::pipeline {

struct CompareOptions {
  std::string arm = "patched";  // which arm of each bundle to compare: control | patched | all
  double material_pct = 1.0;
  uint64_t seed = 1;
};

// Throws UserError when the bundles do not measure the same workloads the same way.
evidence::Bundle compare_bundles(const evidence::Bundle& before, const evidence::Bundle& after,
                                 const CompareOptions& options);

}  // namespace ks::pipeline

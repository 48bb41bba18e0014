#pragma once
// JUnit XML of a bundle, for CI systems: one test case per workload. A material REGRESSION
// is a failure, INVALID an error, INCONCLUSIVE skipped with the reason; everything else
// passes. Pure: bundle in, XML out.
#include <string>

#include "evidence/bundle.hpp"

namespace ks::report {

std::string junit(const evidence::Bundle& bundle);

}  // namespace ks::report

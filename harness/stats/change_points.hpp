#pragma once
// Change points in a series (e.g. one log ratio tip/baseline per night): E-divisive means
// (Matteson & James 2014, the method Apache Otava/Hunter uses on nightly performance data),
// with a permutation significance test so that one noisy night does not make a change point
// and a small persistent shift still does. Pure and deterministic: the permutations are
// drawn from a seeded xoshiro256**, so the same series and seed give the same answer.
//
// Hierarchical divisive search: each current segment proposes the split that maximises the
// energy-distance statistic Q; the best proposal over all segments is kept when fewer than
// alpha of the permuted series (observations shuffled within each segment) reach a larger
// maximum; the search stops at the first proposal that is not significant.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ks::stats {

struct ChangePointOptions {
  double alpha = 0.01;        // significance level of each permutation test
  int permutations = 499;     // p = (1 + #permuted maxima >= observed) / (1 + permutations)
  size_t min_segment = 2;     // fewest observations on either side of a change point
  uint64_t seed = 1;
};

struct ChangePoint {
  size_t index = 0;         // first observation of the new segment
  double p_value = 1;       // of the permutation test that accepted it
  double statistic = 0;     // Q: (m n / (m + n)) times the energy distance of the two sides
  double mean_before = 0;   // means of the segments it separates (as found when accepted)
  double mean_after = 0;
};

// Change points of SERIES in increasing order of index. Empty for a series too short to
// split (fewer than 2 * min_segment observations).
std::vector<ChangePoint> e_divisive_means(const std::vector<double>& series,
                                          const ChangePointOptions& options = {});

}  // namespace ks::stats

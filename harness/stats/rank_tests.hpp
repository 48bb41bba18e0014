#pragma once
// Rank-based inference for two independent samples x and y (in ksandwich: ln of the patched
// and the control point means).
//
// Method choice follows scipy.stats.mannwhitneyu(method="auto") of scipy 1.10: the exact
// null distribution of U when at least one sample has 8 or fewer values and there are no
// ties in the pooled sample; otherwise the normal approximation with tie correction and
// continuity correction. The Hodges-Lehmann interval uses the same choice.
#include <span>

namespace ks::stats {

enum class RankMethod { exact, asymptotic };
const char* to_string(RankMethod m);

RankMethod choose_rank_method(std::span<const double> x, std::span<const double> y);

struct MannWhitney {
  double u = 0;  // U of x: pairs (x_i, y_j) with x_i > y_j, ties counted 1/2 (scipy's statistic)
  double p = 1;  // two-sided
  RankMethod method = RankMethod::exact;
};

// Two-sided Mann-Whitney U test; x and y non-empty.
MannWhitney mann_whitney_u(std::span<const double> x, std::span<const double> y);

// P(U <= k) under the null for sample sizes m and n, without ties.
double mann_whitney_cdf(int k, int m, int n);

struct ShiftEstimate {
  double estimate = 0;   // median over all pairs of x_j - y_i
  double low = 0, high = 0;
  double level = 0;      // confidence actually achieved (order statistics are discrete)
  RankMethod method = RankMethod::exact;
};

// Hodges-Lehmann shift of x relative to y with its distribution-free interval: the order
// statistics D(c) and D(mn + 1 - c) of the mn sorted pairwise differences, where c is the
// smallest count with P(U <= c) >= (1 - level) / 2, at least 1 (as R's wilcox.test does).
// Asymptotic: c = ceil(mn/2 - 1/2 - z sd(U)), the same rule with P from the tie-corrected,
// continuity-corrected normal approximation.
ShiftEstimate hodges_lehmann(std::span<const double> x, std::span<const double> y,
                             double level = 0.95);

}  // namespace ks::stats

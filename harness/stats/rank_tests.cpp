#include "stats/rank_tests.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "stats/normal.hpp"
#include "stats/summary.hpp"

namespace ks::stats {
namespace {

void require_samples(std::span<const double> x, std::span<const double> y) {
  if (x.empty() || y.empty()) throw std::invalid_argument("rank test needs two non-empty samples");
}

std::vector<double> pooled(std::span<const double> x, std::span<const double> y) {
  std::vector<double> all(x.begin(), x.end());
  all.insert(all.end(), y.begin(), y.end());
  return all;
}

// Null distribution of U for sizes m, n: the coefficients of the Gaussian binomial
// [m+n choose m]_q divided by C(m+n, m). Built by [N,k] = [N-1,k-1] + q^k [N-1,k];
// only additions of non-negative counts, so no cancellation even when counts are huge.
std::vector<double> u_null_pmf(int m, int n) {
  if (m > n) std::swap(m, n);  // every intermediate degree k (N - k) then stays <= m n
  const std::size_t size = static_cast<std::size_t>(m) * n + 1;
  std::vector<std::vector<double>> g(m + 1, std::vector<double>(size, 0.0));
  g[0][0] = 1;
  for (int total = 1; total <= m + n; ++total)
    for (int k = std::min(total, m); k >= 1; --k) {
      std::vector<double> next(size, 0.0);
      for (std::size_t u = 0; u < size; ++u) {
        next[u] = g[k - 1][u];
        if (u >= static_cast<std::size_t>(k)) next[u] += g[k][u - k];
      }
      g[k] = std::move(next);
    }
  double all = 0;
  for (double c : g[m]) all += c;
  for (double& c : g[m]) c /= all;
  return g[m];
}

// Average ranks (1-based) of the pooled sample and the tie term sum(t^3 - t).
struct Ranks {
  std::vector<double> rank;
  double tie_term = 0;
};

Ranks average_ranks(const std::vector<double>& values) {
  std::vector<std::size_t> order(values.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](auto a, auto b) { return values[a] < values[b]; });
  Ranks r{std::vector<double>(values.size()), 0};
  for (std::size_t start = 0; start < order.size();) {
    std::size_t end = start;
    while (end < order.size() && values[order[end]] == values[order[start]]) ++end;
    const double average = (static_cast<double>(start + 1 + end)) / 2;  // ranks start+1..end
    for (std::size_t i = start; i < end; ++i) r.rank[order[i]] = average;
    const double t = static_cast<double>(end - start);
    r.tie_term += t * t * t - t;
    start = end;
  }
  return r;
}

double u_stddev(int m, int n, double tie_term) {
  const double total = m + n;
  return std::sqrt(m * static_cast<double>(n) / 12 *
                   ((total + 1) - tie_term / (total * (total - 1))));
}

// Smallest c with P(U <= c) >= tail_probability, from the exact null distribution.
int exact_critical_count(int m, int n, double tail_probability) {
  const auto pmf = u_null_pmf(m, n);
  double cdf = 0;
  for (std::size_t c = 0; c < pmf.size(); ++c) {
    cdf += pmf[c];
    if (cdf >= tail_probability) return static_cast<int>(c);
  }
  return static_cast<int>(pmf.size()) - 1;
}

}  // namespace

const char* to_string(RankMethod m) { return m == RankMethod::exact ? "exact" : "asymptotic"; }

RankMethod choose_rank_method(std::span<const double> x, std::span<const double> y) {
  if (x.size() > 8 && y.size() > 8) return RankMethod::asymptotic;
  auto all = pooled(x, y);
  std::sort(all.begin(), all.end());
  const bool ties = std::adjacent_find(all.begin(), all.end()) != all.end();
  return ties ? RankMethod::asymptotic : RankMethod::exact;
}

double mann_whitney_cdf(int k, int m, int n) {
  if (k < 0) return 0;
  const auto pmf = u_null_pmf(m, n);
  double cdf = 0;
  for (int u = 0; u <= k && u < static_cast<int>(pmf.size()); ++u) cdf += pmf[u];
  return std::min(cdf, 1.0);
}

MannWhitney mann_whitney_u(std::span<const double> x, std::span<const double> y) {
  require_samples(x, y);
  const int m = static_cast<int>(x.size()), n = static_cast<int>(y.size());
  const auto ranks = average_ranks(pooled(x, y));
  double rank_sum_x = 0;
  for (int i = 0; i < m; ++i) rank_sum_x += ranks.rank[i];
  MannWhitney out;
  out.u = rank_sum_x - m * (m + 1.0) / 2;
  out.method = choose_rank_method(x, y);
  const double larger_u = std::max(out.u, m * static_cast<double>(n) - out.u);
  double one_sided;
  if (out.method == RankMethod::exact) {
    // P(U >= larger_u) = P(U <= mn - larger_u) by symmetry.
    one_sided = mann_whitney_cdf(m * n - static_cast<int>(larger_u), m, n);
  } else {
    const double sd = u_stddev(m, n, ranks.tie_term);
    const double numerator = larger_u - m * static_cast<double>(n) / 2 - 0.5;  // continuity
    one_sided = sd > 0 ? normal_sf(numerator / sd) : 1.0;  // all values tied: no evidence
  }
  out.p = std::clamp(2 * one_sided, 0.0, 1.0);
  return out;
}

ShiftEstimate hodges_lehmann(std::span<const double> x, std::span<const double> y, double level) {
  require_samples(x, y);
  const int m = static_cast<int>(x.size()), n = static_cast<int>(y.size());
  const int pairs = m * n;
  std::vector<double> diffs;
  diffs.reserve(pairs);
  for (double xi : x)
    for (double yj : y) diffs.push_back(xi - yj);
  std::sort(diffs.begin(), diffs.end());

  ShiftEstimate out;
  out.estimate = median(diffs);
  out.method = choose_rank_method(x, y);
  const double tail = (1 - level) / 2;
  int c;
  if (out.method == RankMethod::exact) {
    c = std::max(1, exact_critical_count(m, n, tail));
    out.level = 1 - 2 * mann_whitney_cdf(c - 1, m, n);
  } else {
    const double sd = u_stddev(m, n, average_ranks(pooled(x, y)).tie_term);
    const double centre = pairs / 2.0;
    c = static_cast<int>(std::ceil(centre - 0.5 - normal_quantile(1 - tail) * sd));
    c = std::clamp(c, 1, (pairs + 1) / 2);
    out.level = sd > 0 ? 1 - 2 * (1 - normal_sf((c - 1 + 0.5 - centre) / sd)) : 0.0;
  }
  out.low = diffs[c - 1];
  out.high = diffs[pairs - c];
  return out;
}

}  // namespace ks::stats

#include "stats/sequential.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>

#include "stats/noncentral_t.hpp"
#include "stats/normal.hpp"
#include "stats/random.hpp"
#include "stats/student_t.hpp"
#include "stats/summary.hpp"

namespace ks::stats {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double normal_pdf(double x) { return std::exp(-x * x / 2) / std::sqrt(2 * M_PI); }

// Simpson's rule on [-half, half]: points and weights (step h, an even number of intervals).
void simpson_grid(double half, double h_max, std::vector<double>& z, std::vector<double>& w) {
  int n = static_cast<int>(std::ceil(2 * half / h_max));
  n = std::max(n + (n % 2), 2);
  const double h = 2 * half / n;
  z.resize(n + 1);
  w.resize(n + 1);
  for (int i = 0; i <= n; ++i) {
    z[i] = -half + i * h;
    w[i] = h / 3 * ((i == 0 || i == n) ? 1 : (i % 2 ? 4 : 2));
  }
}

// A two-sided t critical value with the same tail as the z boundary c.
double t_critical(double c, int df) {
  const double tail = normal_sf(c);  // one side
  if (!(tail > 0)) return kInf;
  return -student_t_quantile(tail, df);
}

void check(const SequentialDesign& d) {
  if (!(d.min_blocks >= 3 && d.min_blocks <= d.max_blocks && d.alpha > 0 && d.alpha < 0.5 &&
        d.workloads >= 1 && d.material_pct > 0 && d.resolution_sd >= 0 && std::isfinite(d.resolution_sd)))
    throw std::invalid_argument("sequential design: need 3 <= min_blocks <= max_blocks, "
                                "0 < alpha < 0.5, workloads >= 1, material_pct > 0, resolution_sd >= 0");
}

// The recursion of obf_boundaries. Z_j = S_j / sqrt(I_j), S a Brownian motion in the
// information I (here the fraction t). Given Z_{j-1} = u, Z_j = (u b + X) / a with
// a = sqrt(I_j), b = sqrt(I_{j-1}) and X ~ N(0, sd^2), sd^2 = I_j - I_{j-1}.
// A Path holds the sub-density of Z_{j-1} over the paths that have not stopped, times
// Simpson weights, on the grid z.
struct Step {
  double a, b, sd;
  Step(double t_prev, double t) : a(std::sqrt(t)), b(std::sqrt(t_prev)), sd(std::sqrt(t - t_prev)) {}
};
struct Path {
  std::vector<double> z, g;
};

// P(not stopped before, |Z_j| >= c).
double exit_probability(const Path& p, const Step& s, double c) {
  double sum = 0;
  for (std::size_t i = 0; i < p.z.size(); ++i)
    sum += p.g[i] * (normal_sf((c * s.a - p.z[i] * s.b) / s.sd) + normal_sf((c * s.a + p.z[i] * s.b) / s.sd));
  return sum;
}

// The c at which exit_probability falls to `target` (it decreases in c), by bisection.
double solve_boundary(const Path& p, const Step& s, double target) {
  double lo = 0, hi = 50;
  while (hi - lo > 1e-10) {
    const double mid = lo + (hi - lo) / 2;
    (exit_probability(p, s, mid) > target ? lo : hi) = mid;
  }
  return lo + (hi - lo) / 2;
}

// The sub-density of Z_j on (-c, c) (cut at +-12, where it is below 1e-31) on a Simpson grid
// of step at most h: the first look's is the normal density; later ones integrate the
// previous density against the normal transition kernel, over the u within 10 kernel sds
// (sd / b) of z' a / b, which carry all but 1e-22 of it.
Path carry(const Path* previous, const Step* s, double c, double h_max) {
  Path next;
  std::vector<double> w;
  simpson_grid(std::min(c, 12.0), h_max, next.z, w);
  next.g.assign(next.z.size(), 0.0);
  for (std::size_t k = 0; k < next.z.size(); ++k) {
    if (!previous) {
      next.g[k] = w[k] * normal_pdf(next.z[k]);
      continue;
    }
    const auto& z = previous->z;
    const double h = z[1] - z[0], centre = next.z[k] * s->a / s->b, reach = 10 * s->sd / s->b;
    const auto n = static_cast<std::ptrdiff_t>(z.size());
    const auto first = std::max<std::ptrdiff_t>(0, std::floor((centre - reach - z[0]) / h));
    const auto last = std::min<std::ptrdiff_t>(n - 1, std::ceil((centre + reach - z[0]) / h));
    double density = 0;
    for (auto i = first; i <= last; ++i)
      density += previous->g[i] * normal_pdf((next.z[k] * s->a - z[i] * s->b) / s->sd);
    next.g[k] = w[k] * density * s->a / s->sd;
  }
  return next;
}

}  // namespace

double obf_spent(double alpha, double t) {
  if (!(alpha > 0 && alpha < 1 && t >= 0 && t <= 1)) throw std::invalid_argument("obf_spent: bad argument");
  if (t == 0) return 0;
  return 4 * normal_sf(-normal_quantile(alpha / 4) / std::sqrt(t));
}

std::vector<double> obf_boundaries(std::span<const double> t, double alpha) {
  // Grid steps: a quarter of the transition kernel's sd in z (8 per sd: 20x closer
  // boundaries, twice the time), and at most 0.05.
  constexpr double kStepsPerKernelSd = 4, kStepMax = 0.05;
  std::vector<double> c;
  Path path;
  for (std::size_t j = 0; j < t.size(); ++j) {
    if (!(t[j] > 0 && t[j] <= 1) || (j > 0 && !(t[j] > t[j - 1])))
      throw std::invalid_argument("obf boundaries: fractions must increase within (0, 1]");
    const double target = obf_spent(alpha, t[j]) - (j > 0 ? obf_spent(alpha, t[j - 1]) : 0.0);
    if (!(target > 0))
      c.push_back(kInf);  // spends nothing representable: never crossed
    else if (j == 0)
      c.push_back(-normal_quantile(target / 2));
    else
      c.push_back(solve_boundary(path, Step(t[j - 1], t[j]), target));
    if (j + 1 == t.size()) break;
    // Fine enough for this step's kernel (sd sqrt(D_j / I_j) in z) and the next one's.
    double kernel_sd = std::sqrt((t[j + 1] - t[j]) / t[j]);
    if (j > 0) kernel_sd = std::min(kernel_sd, std::sqrt((t[j] - t[j - 1]) / t[j]));
    const double h = std::min(kStepMax, kernel_sd / kStepsPerKernelSd);
    if (j == 0) {
      path = carry(nullptr, nullptr, c[j], h);
    } else {
      const Step step(t[j - 1], t[j]);
      path = carry(&path, &step, c[j], h);
    }
  }
  return c;
}

namespace {

// Null runs simulated to calibrate the t-scale change boundaries: the rate is then alpha / m
// within about 1.5% of itself (binomial sd of a rate of 0.05 in 100,000 runs: 0.0007).
constexpr int kCalibrationRuns = 100000;
constexpr uint64_t kCalibrationSeed = 20261203;

// The factor by which the tail-matched t boundaries C (looks at min_blocks, min_blocks + 1,
// ...) must be scaled so that a run without change crosses one of them with probability
// ALPHA_W exactly: the (1 - alpha_w) quantile, over seeded normal null runs, of each run's
// largest |t_k| / c_k. The t statistic of normal data does not depend on its sd, so one
// simulation serves every spread. Equivalence stops are ignored (they only end runs that
// might have crossed later): at most alpha_w with them.
double null_scale(const std::vector<double>& c, int min_blocks, double alpha_w) {
  Xoshiro256 rng(kCalibrationSeed);
  std::vector<double> worst(kCalibrationRuns);
  const int max_blocks = min_blocks + static_cast<int>(c.size()) - 1;
  for (auto& w : worst) {
    double sum = 0, sum_sq = 0;
    w = 0;
    for (int k = 1; k <= max_blocks; ++k) {
      const double d = normal_draw(rng);
      sum += d;
      sum_sq += d * d;
      if (k < min_blocks) continue;
      const double mean = sum / k, var = (sum_sq - k * mean * mean) / (k - 1);
      if (var > 0) w = std::max(w, std::fabs(mean) / std::sqrt(var / k) / c[static_cast<size_t>(k - min_blocks)]);
    }
  }
  const auto at = static_cast<size_t>(std::floor((1 - alpha_w) * kCalibrationRuns));
  std::nth_element(worst.begin(), worst.begin() + static_cast<long>(at), worst.end());
  return worst[at];
}

}  // namespace

SequentialBoundaries sequential_boundaries(const SequentialDesign& design) {
  check(design);
  std::vector<double> fractions;
  for (int k = design.min_blocks; k <= design.max_blocks; ++k)
    fractions.push_back(static_cast<double>(k) / design.max_blocks);
  const double alpha_w = design.alpha / design.workloads;
  const auto change_z = obf_boundaries(fractions, alpha_w);
  const auto equivalence_z = obf_boundaries(fractions, 2 * alpha_w);
  SequentialBoundaries b;
  b.min_blocks = design.min_blocks;
  for (std::size_t j = 0; j < fractions.size(); ++j) {
    const int df = design.min_blocks + static_cast<int>(j) - 1;
    b.change.push_back(t_critical(change_z[j], df));
    b.equivalence.push_back(t_critical(equivalence_z[j], df));
  }
  // Tail matching keeps each look's own rate, but successive t statistics are less
  // correlated than the z's (each has its own sd), so their union crosses more often: 5.5%
  // for one workload at alpha 0.05 with looks at 3..15 blocks. Scaled to alpha / m exactly.
  // A single look is the fixed-sample t test: exact already.
  const double scale = b.change.size() > 1 ? null_scale(b.change, design.min_blocks, alpha_w) : 1.0;
  for (auto& c : b.change) c *= scale;
  b.change_z = change_z;
  b.equivalence_z = equivalence_z;
  return b;
}

LookResult look(const SequentialDesign& design, const SequentialBoundaries& boundaries,
                std::span<const double> d) {
  check(design);
  const int k = static_cast<int>(d.size());
  if (k > design.max_blocks) throw std::invalid_argument("sequential look: more blocks than max_blocks");
  for (double v : d)
    if (!std::isfinite(v)) throw std::invalid_argument("sequential look: a block log ratio is not finite");
  LookResult r;
  if (k < 3) return r;  // NoClaim: no spread to judge by
  r.estimate_log = mean(d);
  r.df = k - 1;
  const double delta = design.material_pct / 100;
  r.material = std::fabs(std::expm1(r.estimate_log)) >= delta;
  const double observed = sample_stddev(d);
  r.at_floor = design.resolution_sd > 0 && observed <= design.resolution_sd;
  const double se = (r.at_floor ? design.resolution_sd : observed) / std::sqrt(k);
  if (!(se > 0)) return r;  // NoClaim: zero spread would make any interval a point
  if (k < design.min_blocks) {
    r.decision = LookResult::Continue;
    return r;
  }
  const auto j = static_cast<std::size_t>(k - boundaries.min_blocks);
  if (boundaries.min_blocks != design.min_blocks || j >= boundaries.change.size())
    throw std::invalid_argument("sequential look: boundaries of another design");
  r.critical = (r.at_floor ? boundaries.change_z : boundaries.change)[j];
  r.critical_equivalence = (r.at_floor ? boundaries.equivalence_z : boundaries.equivalence)[j];
  r.lo_log = r.estimate_log - r.critical * se;
  r.hi_log = r.estimate_log + r.critical * se;
  r.eq_lo_log = r.estimate_log - r.critical_equivalence * se;
  r.eq_hi_log = r.estimate_log + r.critical_equivalence * se;
  if (r.lo_log > 0 || r.hi_log < 0)
    r.decision = LookResult::Change;
  else if (r.eq_lo_log > std::log1p(-delta) && r.eq_hi_log < std::log1p(delta))
    r.decision = LookResult::Equivalent;
  else
    r.decision = k == design.max_blocks ? LookResult::NoClaim : LookResult::Continue;
  return r;
}

LookResult look(const SequentialDesign& design, std::span<const double> d) {
  check(design);
  return look(design, sequential_boundaries(design), d);
}

SimulatedRuns simulate_runs(const SequentialDesign& design, const SequentialBoundaries& boundaries,
                            double sd, std::span<const double> effects_log, int runs,
                            unsigned long long seed) {
  check(design);
  if (runs < 1 || effects_log.empty()) throw std::invalid_argument("simulate_runs: nothing to simulate");
  const std::size_t m = effects_log.size();
  Xoshiro256 rng(seed);
  SimulatedRuns out;
  out.change_rate.assign(m, 0.0);
  out.material_rate.assign(m, 0.0);
  double blocks = 0, any_material = 0;
  std::vector<std::vector<double>> d(m);
  std::vector<bool> decided(m);
  for (int run = 0; run < runs; ++run) {
    for (auto& x : d) x.clear();
    decided.assign(m, false);
    bool material_somewhere = false;
    int k = 0;
    while (k < design.max_blocks) {
      ++k;
      for (std::size_t w = 0; w < m; ++w) d[w].push_back(effects_log[w] + sd * normal_draw(rng));
      if (k < design.min_blocks) continue;
      bool all = true;
      for (std::size_t w = 0; w < m; ++w) {
        if (decided[w]) continue;
        const auto r = look(design, boundaries, d[w]);
        if (r.decision == LookResult::Change) {
          out.change_rate[w] += 1;
          if (r.material) {
            out.material_rate[w] += 1;
            material_somewhere = true;
          }
        }
        decided[w] = r.decision == LookResult::Change || r.decision == LookResult::Equivalent;
        all = all && decided[w];
      }
      if (all) break;
    }
    blocks += k;
    any_material += material_somewhere;
  }
  out.mean_blocks = blocks / runs;
  out.any_material_change_rate = any_material / runs;
  for (std::size_t w = 0; w < m; ++w) {
    out.change_rate[w] /= runs;
    out.material_rate[w] /= runs;
  }
  return out;
}

double median_unbiased_log(const SequentialDesign& design, const SequentialBoundaries& boundaries, int k,
                           double estimate_log, double sd, int paths) {
  check(design);
  if (k < design.min_blocks || k > design.max_blocks || !(sd > 0) || !std::isfinite(estimate_log) || paths < 100)
    throw std::invalid_argument("median_unbiased_log: needs min_blocks <= k <= max_blocks, sd > 0, 100+ paths");
  if (boundaries.min_blocks != design.min_blocks ||
      boundaries.change.size() < static_cast<std::size_t>(k - design.min_blocks + 1))
    throw std::invalid_argument("median_unbiased_log: boundaries of another design");
  // At the first look no earlier look could have stopped: the estimate is median-unbiased.
  if (k == design.min_blocks) return estimate_log;
  // Per path and look j = 1..k, the mean and the sd / sqrt(j) of j standard normal draws:
  // a path's block log ratios under effect theta are theta + sd * draw, so its estimate at
  // look j is theta + sd * mean_j and its standard error sd * scaled_sd_j.
  const std::size_t n = static_cast<std::size_t>(paths), looks = static_cast<std::size_t>(k);
  std::vector<double> means(n * looks), ses(n * looks);
  Xoshiro256 rng(0x6d65646961'6e5f75ULL);  // fixed: the same draws for every call
  for (std::size_t i = 0; i < n; ++i) {
    double mean_j = 0, m2 = 0;
    for (std::size_t j = 1; j <= looks; ++j) {
      const double x = normal_draw(rng), step = x - mean_j;
      mean_j += step / static_cast<double>(j);
      m2 += step * (x - mean_j);
      means[i * looks + j - 1] = mean_j;
      ses[i * looks + j - 1] = j > 1 ? std::sqrt(m2 / static_cast<double>(j - 1) / static_cast<double>(j)) : 0;
    }
  }
  const double up = estimate_log >= 0 ? 1 : -1;  // the direction of the observed change
  const double band_lo = std::log1p(-design.material_pct / 100), band_hi = std::log1p(design.material_pct / 100);
  // The share of paths at least as extreme as the observation, in the stagewise order.
  auto beyond = [&](double theta) {
    std::size_t count = 0;
    for (std::size_t i = 0; i < n; ++i) {
      bool stopped = false, extreme = false;
      for (int j = design.min_blocks; j < k && !stopped; ++j) {
        const std::size_t at = i * looks + static_cast<std::size_t>(j - 1);
        const double est = theta + sd * means[at], se = sd * ses[at];
        const std::size_t b = static_cast<std::size_t>(j - design.min_blocks);
        const double c = boundaries.change[b], ce = boundaries.equivalence[b];
        if (est - c * se > 0 || est + c * se < 0) {
          stopped = true;
          extreme = up * est > 0;
        } else if (est - ce * se > band_lo && est + ce * se < band_hi) {
          stopped = true;
        }
      }
      if (!stopped) extreme = up * (theta + sd * means[i * looks + looks - 1]) >= up * estimate_log;
      count += extreme;
    }
    return static_cast<double>(count) / static_cast<double>(n);
  };
  double lo = estimate_log - 10 * sd, hi = estimate_log + 10 * sd;
  for (int i = 0; i < 36; ++i) {  // to 20 sd / 2^36: far below the simulation's own error
    const double mid = lo + (hi - lo) / 2;
    // Larger effects make more paths extreme upwards, fewer downwards.
    ((beyond(mid) < 0.5) == (up > 0) ? lo : hi) = mid;
  }
  return lo + (hi - lo) / 2;
}

const SequentialBoundaries& cached_boundaries(const SequentialDesign& design) {
  static std::mutex mutex;
  static std::map<std::tuple<int, int, double, int>, SequentialBoundaries> cache;
  const auto key = std::tuple{design.min_blocks, design.max_blocks, design.alpha, design.workloads};
  {
    std::lock_guard lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  auto b = sequential_boundaries(design);  // outside the lock: a numerical integration
  std::lock_guard lock(mutex);
  return cache.emplace(key, std::move(b)).first->second;
}

Plan blocks_for_power(double sd, double target_mde_pct, double alpha, double power, int workloads, int min_blocks,
                      int max_blocks) {
  if (!(sd > 0 && target_mde_pct > 0 && power > 0 && power < 1))
    throw std::invalid_argument("plan_blocks: need sd > 0, target > 0 and 0 < power < 1");
  const SequentialDesign design{min_blocks, max_blocks, alpha, workloads, target_mde_pct};
  check(design);
  const double effect = std::log1p(target_mde_pct / 100), alpha_w = alpha / workloads;
  auto ncp = [&](int k) { return effect / (sd / std::sqrt(k)); };
  auto fixed_power = [&](int k) { return t_test_power(ncp(k), k - 1, alpha_w); };
  auto sequential_power = [&](int k) {
    auto at = design;
    at.max_blocks = k;
    return t_test_power_at(cached_boundaries(at).change.back(), k - 1, ncp(k));
  };
  // The fixed-sample test (no interim looks) is at least as powerful at its last look:
  // the search starts where it first reaches the power.
  int k = min_blocks;
  while (k < max_blocks && fixed_power(k) < power) ++k;
  if (fixed_power(k) < power) return {k, false, fixed_power(k)};  // out of reach even without looks
  // The looks cost a few percent of blocks: step up by an eighth until the power is reached,
  // then bisect the last step.
  int lo = k, hi = k;
  while (sequential_power(hi) < power) {
    if (hi >= max_blocks) return {hi, false, sequential_power(hi)};
    lo = hi + 1;
    hi = std::min(max_blocks, hi + std::max(1, hi / 8));
  }
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (sequential_power(mid) >= power)
      hi = mid;
    else
      lo = mid + 1;
  }
  return {hi, true, sequential_power(hi)};
}

Plan plan_blocks(double sd, double target_mde_pct, double alpha, double power, int workloads,
                 int min_blocks, int max_blocks) {
  Plan plan = blocks_for_power(sd, target_mde_pct, alpha, power, workloads, min_blocks, max_blocks);
  SequentialDesign design{min_blocks, plan.k_max, alpha, workloads, target_mde_pct};
  const auto& b = cached_boundaries(design);
  // Out of reach: blocks_for_power gave the fixed-sample bound; the design's own final look.
  if (!plan.reached)
    plan.power = t_test_power_at(b.change.back(), plan.k_max - 1, std::log1p(target_mde_pct / 100) /
                                                                     (sd / std::sqrt(plan.k_max)));
  std::vector<double> effects(workloads, 0.0);
  plan.expected_blocks_null = simulate_runs(design, b, sd, effects, 4000, 1).mean_blocks;
  effects[0] = std::log1p(target_mde_pct / 100);
  plan.expected_blocks_effect = simulate_runs(design, b, sd, effects, 4000, 2).mean_blocks;
  return plan;
}

}  // namespace ks::stats

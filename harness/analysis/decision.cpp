#include "analysis/decision.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <span>
#include <stdexcept>

#include "stats/noncentral_t.hpp"
#include "stats/power.hpp"
#include "stats/student_t.hpp"
#include "stats/summary.hpp"

namespace ks::analysis {
namespace {

// A calibrated spread is taken as known: a t with this many degrees of freedom stands for
// the normal quantile (stats/ has t quantiles, and mde_pct/blocks_needed take a df).
constexpr double kKnownSpreadDf = 1000;

// An sd of log ratios below this is rounding, not noise: identical summaries give logs
// whose mean is off by an ulp.
constexpr double kZeroSpread = 1e-12;

double spread(double sd) { return sd < kZeroSpread ? 0.0 : sd; }

// Regularized lower incomplete gamma P(a, x): the series for x < a + 1, else the continued
// fraction of Q (Numerical Recipes 6.2). Only for the chi-square bound of the MDE; it
// belongs in stats/ and can move there.
double gamma_p(double a, double x) {
  if (x <= 0) return 0;
  const double log_front = a * std::log(x) - x - std::lgamma(a);
  if (x < a + 1) {
    double term = 1 / a, sum = term;
    for (int n = 1; n < 10000; ++n) {
      term *= x / (a + n);
      sum += term;
      if (std::fabs(term) < std::fabs(sum) * 1e-16) break;
    }
    return sum * std::exp(log_front);
  }
  constexpr double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 10000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1) < 1e-16) break;
  }
  return 1 - std::exp(log_front) * h;
}

// What the two schemes share once their data are reduced to a mean log ratio, the observed
// spread of one block log ratio and how the standard error follows from it.
struct Design {
  double estimate_log = 0;
  std::optional<double> sd;  // observed sd of one block log ratio; none when df < 1
  double df = 0;             // degrees of freedom of sd
  double se_factor = 1;      // SE(estimate_log) = sd * se_factor
  int blocks_run = 0;        // blocks (or the smaller arm's points) this run had
  const char* unit = "block";
};

evidence::Interval interval_at(double estimate_log, double se, double df, double level) {
  const double half = stats::student_t_quantile((1 + level) / 2, df) * se;
  return {std::exp(estimate_log), std::exp(estimate_log - half), std::exp(estimate_log + half),
          level};
}

Decision decide(const Design& x, const DecisionOptions& o) {
  Decision r;
  r.estimate_log = x.estimate_log;
  r.sd_log_ratio = x.sd;

  std::optional<double> calibrated;
  if (o.calibrated_sd && *o.calibrated_sd > 0 && std::isfinite(*o.calibrated_sd))
    calibrated = *o.calibrated_sd;
  else if (o.calibrated_sd)
    r.notes.push_back("the calibrated spread is not a positive number and was ignored");

  // The interval: the clock's resolution floor as a known spread when the run's own spread
  // is under it; else the run's own spread when it has one worth the name, else the
  // calibrated spread as a known one, else no claim.
  r.at_resolution_floor = o.resolution_sd > 0 && x.sd && *x.sd <= o.resolution_sd;
  const bool observed = !r.at_resolution_floor && x.sd && *x.sd > 0 && x.df >= 2;
  std::optional<double> sd, df;
  if (r.at_resolution_floor) {
    sd = o.resolution_sd;
    df = kKnownSpreadDf;
    r.notes.push_back(fmt::format(
        "the spread between {}s ({:.2g}% per {} ratio) is within the clock's resolution floor: the "
        "interval takes the floor ({:.3g}%) as a known spread",
        x.unit, 100 * *x.sd, x.unit, 100 * o.resolution_sd));
  } else if (observed) {
    sd = *x.sd;
    df = x.df;
  } else if (calibrated) {
    sd = *calibrated;
    df = kKnownSpreadDf;
    r.notes.push_back(fmt::format(
        "the run has no noise estimate of its own ({}): the interval uses the calibrated "
        "spread ({:.3g}% per block ratio) as known",
        x.sd && *x.sd == 0 ? "zero spread" : fmt::format("{:g} degree(s) of freedom", x.df),
        100 * *calibrated));
  } else if (x.sd && *x.sd == 0) {
    r.notes.push_back(fmt::format(
        "zero spread between {}s: no noise estimate, so no claim (identical figures are a "
        "sign of too few {}s or of a broken timer, not of certainty)",
        x.unit, x.unit));
  } else {
    r.notes.push_back(fmt::format(
        "{:g} degree(s) of freedom of boot-to-boot noise: too few to estimate it, so no claim; "
        "run the confirm scheme with more blocks, or give a calibrated spread",
        x.df));
  }

  if (sd) {
    const double se = *sd * x.se_factor;
    r.interval = interval_at(x.estimate_log, se, *df, 1 - o.alpha);
    r.interval90 = interval_at(x.estimate_log, se, *df, 0.90);
    r.p = std::min(1.0, 2 * stats::student_t_sf(std::fabs(x.estimate_log) / se, *df));
    if (observed) r.df = *df;
    const double band = o.material_pct / 100;
    if (r.interval->low > 1.0 || r.interval->high < 1.0)
      r.claim = Claim::change;
    else if (r.interval90->low >= 1.0 - band && r.interval90->high <= 1.0 + band)
      r.claim = Claim::equivalent;
  }

  // What this run could have detected: from the calibrated spread if there is one, else
  // from an upper 80% bound of the observed one (an sd from few df is itself noise).
  std::optional<double> sd_mde;
  double df_mde = observed ? x.df : kKnownSpreadDf;
  if (r.at_resolution_floor) {
    sd_mde = o.resolution_sd;
    r.mde_basis = "clock's resolution floor";
  } else if (calibrated) {
    sd_mde = *calibrated;
    r.mde_basis = "calibrated";
  } else if (x.sd && *x.sd > 0 && x.df >= 1) {
    sd_mde = sd_upper_bound(*x.sd, x.df, 0.80);
    df_mde = x.df;
    r.mde_basis = "observed upper 80% bound";
  }
  if (sd_mde && o.sequential && x.blocks_run >= o.sequential->min_blocks) {
    // A confirm run's own design: its look at this many blocks (the boundary there, alpha
    // split over the workloads, paired k - 1 df) and the cap its sequential test needs.
    const auto& design = *o.sequential;
    const auto& b = stats::cached_boundaries(design);
    const int k = std::min(x.blocks_run, design.max_blocks);
    const double test_df = df ? *df : df_mde;  // the interval's: t with k - 1 df, or a known spread
    const bool known = test_df >= kKnownSpreadDf;
    const size_t look = static_cast<size_t>(k - design.min_blocks);
    const double ncp = stats::ncp_for_power(known ? b.change_z[look] : b.change[look], known ? kKnownSpreadDf : k - 1);
    if (std::isfinite(ncp))
      r.mde_pct = 100 * ncp * *sd_mde / std::sqrt(k);  // in log ratio units, as stats::mde_pct
    else  // forty-first attack: an uncalibrated run of 45 blocks crashed at its first look
      r.notes.push_back(fmt::format("the look after block {} of at most {} can detect no change: its boundary is "
                                    "beyond reach this early",
                                    k, design.max_blocks));
    r.blocks_needed = std::max(x.blocks_run, stats::blocks_for_power(*sd_mde, o.material_pct, design.alpha, 0.8,
                                                                     design.workloads, design.min_blocks,
                                                                     evidence::kMaxBlocksNeeded)
                                                  .k_max);
  } else if (sd_mde && x.blocks_run > 0) {
    r.mde_pct = stats::mde_pct(*sd_mde * x.se_factor, df_mde);
    // blocks_needed takes the sd of one point's log summary: a block ratio has sqrt(2) of it.
    r.blocks_needed =
        stats::blocks_needed(*sd_mde / std::sqrt(2.0), o.material_pct, std::max(x.blocks_run, 2), evidence::kMaxBlocksNeeded);
  }
  return r;
}

double sum_of_squares(const std::vector<double>& xs) {
  const double m = stats::mean(xs);
  double ss = 0;
  for (double v : xs) ss += (v - m) * (v - m);
  return ss;
}

}  // namespace

double chi_square_quantile(double p, double df) {
  if (!(p > 0 && p < 1 && df > 0)) throw std::invalid_argument("chi-square quantile: bad argument");
  double lo = 0, hi = std::max(1.0, df);
  while (gamma_p(df / 2, hi / 2) < p) {
    lo = hi;
    hi *= 2;
  }
  for (int i = 0; i < 200; ++i) {
    const double mid = lo + (hi - lo) / 2;
    if (mid == lo || mid == hi) break;
    (gamma_p(df / 2, mid / 2) < p ? lo : hi) = mid;
  }
  return lo + (hi - lo) / 2;
}

double sd_upper_bound(double sd, double df, double level) {
  return sd * std::sqrt(df / chi_square_quantile(1 - level, df));
}

namespace {

evidence::Interval log_interval(double estimate_log, double lo_log, double hi_log, double level) {
  return {std::exp(estimate_log), std::exp(lo_log), std::exp(hi_log), level};
}

// The fixed-sample decision's intervals and claim replaced by the sequential look's; the
// p value and the MDE stay as descriptions of this many blocks.
void judge_sequentially(Decision& r, const std::vector<double>& d, const stats::SequentialDesign& design) {
  // More whole blocks than the design's cap (a block first left out as disturbed, then not,
  // beside its replacement): the looks end at the cap.
  const int k = std::min(static_cast<int>(d.size()), design.max_blocks);
  if (static_cast<int>(d.size()) > k)
    r.notes.push_back(fmt::format("{} whole blocks, more than the design's {}: the first {} decide", d.size(), k, k));
  if ((!r.df && !r.at_resolution_floor) || k < design.min_blocks) {  // no noise estimate of its own: no claim
    r.notes.push_back(k < design.min_blocks
                          ? fmt::format("{} of at least {} blocks: too early to look", k, design.min_blocks)
                          : std::string("the sequential design needs the run's own noise estimate: no claim"));
    r.interval.reset();
    r.interval90.reset();
    r.claim = Claim::none;
    return;
  }
  // The run looked after every block from min_blocks on; its first decisive look is the
  // decision (what the design's error rates and power assume), later blocks only add data.
  const auto& boundaries = stats::cached_boundaries(design);
  stats::LookResult looked;
  int at = design.min_blocks;
  for (; at <= k; ++at) {
    looked = stats::look(design, boundaries, std::span<const double>(d.data(), static_cast<size_t>(at)));
    if (looked.decision == stats::LookResult::Change || looked.decision == stats::LookResult::Equivalent) break;
  }
  at = std::min(at, k);
  const double level = 1 - design.alpha / design.workloads;
  r.interval = log_interval(looked.estimate_log, looked.lo_log, looked.hi_log, level);
  r.interval90 = log_interval(looked.estimate_log, looked.eq_lo_log, looked.eq_hi_log, 1 - 2 * (1 - level));
  r.claim = looked.decision == stats::LookResult::Change       ? Claim::change
            : looked.decision == stats::LookResult::Equivalent ? Claim::equivalent
                                                               : Claim::none;
  // An early look of a long design asks for a t in the millions: its interval is all of (0, inf),
  // which a bundle cannot hold (forty-first attack: 20 to 40 blocks wrote an infinite bound).
  const auto representable = [](const evidence::Interval& i) { return i.low > 0 && std::isfinite(i.high); };
  if (!representable(*r.interval) || !representable(*r.interval90)) {
    r.interval.reset();
    r.interval90.reset();
    r.claim = Claim::none;
  }
  if (r.claim == Claim::change && !looked.at_floor) {
    const std::span<const double> decided(d.data(), static_cast<size_t>(at));
    r.adjusted_log = stats::median_unbiased_log(design, boundaries, at, looked.estimate_log,
                                                stats::sample_stddev(decided));
  }
  r.notes.push_back(fmt::format(
      "{} at the look after block {} of at most {}: repeated confidence intervals (O'Brien-Fleming "
      "spending, alpha {} split over {} workload(s)), critical {} {:.3g}",
      r.claim == Claim::none ? "undecided" : "decided", at, design.max_blocks, design.alpha, design.workloads,
      looked.at_floor ? "z (the clock's floor as known spread)" : "t", looked.critical));
}

}  // namespace

Decision decide_paired(const std::vector<double>& d, const DecisionOptions& options) {
  if (d.empty()) {
    Decision r;
    r.notes.push_back("no whole block: nothing to compare");
    return r;
  }
  Design x;
  const double k = static_cast<double>(d.size());
  x.estimate_log = stats::mean(d);
  x.df = k - 1;
  if (d.size() >= 2) x.sd = spread(stats::sample_stddev(d));
  x.se_factor = 1 / std::sqrt(k);
  x.blocks_run = static_cast<int>(d.size());
  x.unit = "block";
  auto r = decide(x, options);
  if (options.sequential) judge_sequentially(r, d, *options.sequential);
  return r;
}

Decision decide_unpaired(const std::vector<double>& log_patched,
                         const std::vector<double>& log_control, const DecisionOptions& options) {
  if (log_patched.empty() || log_control.empty()) {
    Decision r;
    r.notes.push_back("an arm has no point: nothing to compare");
    return r;
  }
  Design x;
  const double kp = static_cast<double>(log_patched.size());
  const double kc = static_cast<double>(log_control.size());
  x.estimate_log = stats::mean(log_patched) - stats::mean(log_control);
  x.df = kp + kc - 2;
  // The pooled sd of ln point summaries, each around its own arm's mean; a block ratio
  // (one point of each arm) has sqrt(2) times it.
  if (x.df >= 1)
    x.sd = spread(
        std::sqrt(2 * (sum_of_squares(log_patched) + sum_of_squares(log_control)) / x.df));
  x.se_factor = std::sqrt((1 / kp + 1 / kc) / 2);
  x.blocks_run = static_cast<int>(std::min(kp, kc));
  x.unit = "point";
  return decide(x, options);
}

}  // namespace ks::analysis

#pragma once
// What a run could have detected, and what it would take to detect less.

namespace ks::stats {

// Minimum detectable effect at two-sided alpha 0.05 and power 0.8, in percent:
// (t_{df,.975} + t_{df,.80}) SE(ln rho), read as a percentage (ln rho ~= rho - 1 when
// small). For many degrees of freedom the factor is the familiar 1.96 + 0.84 = 2.80; with
// the single degree of freedom of a screen it is 14.1, and saying 2.80 there would promise
// a sensitivity the run does not have.
double mde_pct(double se_log_ratio, double df);

// Blocks k' (each one point per arm) for a confirm run whose MDE reaches target_pct, given
// the boot-to-boot sd of ln point means: the smallest k' >= blocks_run with
// mde_pct(sd sqrt(2 / k'), 2k' - 2) <= target_pct; at most `cap` (returned when even the
// cap is not enough).
int blocks_needed(double sd_log, double target_pct, int blocks_run, int cap = 1000);

}  // namespace ks::stats

#pragma once
// What a run could have detected, and what it would take to detect less.

namespace ks::stats {

// Minimum detectable effect at two-sided alpha 0.05 and power 0.8, in percent: the effect
// delta at which the exact power of the t test with `df` degrees of freedom,
// P(|T'| > t_{df,.975}) with T' noncentral t (ncp = delta / se), is 0.8; read as a
// percentage (ln rho ~= rho - 1 when small). For many degrees of freedom the factor of SE
// is the familiar 2.80; with 4 df it is 3.76, and with the single degree of freedom of a
// screen 16.3: saying 2.80 there would promise a sensitivity the run does not have (the
// older shortcut t_{.975} + t_{.80} said 14.1 for 1 df: still too optimistic).
double mde_pct(double se_log_ratio, double df);

// Blocks k' (each one point per arm) for a confirm run whose MDE reaches target_pct, given
// the boot-to-boot sd of ln point means: the smallest k' >= blocks_run with
// mde_pct(sd sqrt(2 / k'), 2k' - 2) <= target_pct; at most `cap` (returned when even the
// cap is not enough).
int blocks_needed(double sd_log, double target_pct, int blocks_run, int cap = 1000);

}  // namespace ks::stats

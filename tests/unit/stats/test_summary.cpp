#include <catch2/catch.hpp>
#include <stdexcept>
#include <vector>

#include "stats/summary.hpp"

using ks::stats::summarize;

TEST_CASE("stats: stddev matches google/benchmark's pinned value", "[stats]") {
  // google/benchmark test/statistics_gtest.cc: StdDev({2.5,2.4,3.3,4.2,5.1}) == 1.151086443322134
  const std::vector<double> xs{2.5, 2.4, 3.3, 4.2, 5.1};
  CHECK(ks::stats::sample_stddev(xs) == Approx(1.151086443322134).epsilon(1e-15));
}

TEST_CASE("stats: summary of a sample", "[stats]") {
  // numpy 1.24.2: x=[3,1,4,1,5,9]; x.mean(), x.std(ddof=1), np.median(x), x[1:].mean()
  const std::vector<double> xs{3, 1, 4, 1, 5, 9};
  const auto s = summarize(xs);
  CHECK(s.n == 6);
  CHECK(s.mean == Approx(3.8333333333333335).epsilon(1e-15));
  CHECK(s.stddev == Approx(2.9944392908634274).epsilon(1e-15));
  CHECK(s.median == Approx(3.5));
  CHECK(s.mean_skip_first == Approx(4.0));
  CHECK(s.min == 1);
  CHECK(s.max == 9);
}

TEST_CASE("stats: summary of one round", "[stats]") {
  const auto s = summarize(std::vector<double>{42.5});
  CHECK(s.n == 1);
  CHECK(s.mean == 42.5);
  CHECK(s.stddev == 0);  // n - 1 == 0: no spread can be estimated; 0 by convention
  CHECK(s.median == 42.5);
  CHECK(s.mean_skip_first == 42.5);  // dropping the only round would leave nothing
}

TEST_CASE("stats: summary of identical values has zero spread", "[stats]") {
  const auto s = summarize(std::vector<double>{7, 7, 7, 7});
  CHECK(s.stddev == 0);
  CHECK(s.mean == 7);
  CHECK(s.mean_skip_first == 7);
}

TEST_CASE("stats: an empty sample is refused", "[stats]") {
  CHECK_THROWS_AS(summarize(std::vector<double>{}), std::invalid_argument);
  CHECK_THROWS_AS(ks::stats::mean(std::vector<double>{}), std::invalid_argument);
}

TEST_CASE("stats: percent change", "[stats]") {
  // numpy/python: 100*(2159.123-2943.790)/2943.790
  CHECK(ks::stats::pct_change(2943.790, 2159.123) == Approx(-26.65499237377666).epsilon(1e-14));
  CHECK(ks::stats::pct_change(10, 12) == Approx(20.0));
  CHECK(ks::stats::pct_change(11.5, 8) == Approx(-30.434782608695652));
  CHECK_THROWS_AS(ks::stats::pct_change(0, 1), std::invalid_argument);
}

#include <catch2/catch.hpp>

#include "agent/clock.hpp"

using ks::agent::ClockSpan;
using ks::agent::clocks_agree;

TEST_CASE("equal clocks agree", "[agent][clock]") {
  CHECK(clocks_agree({50'000'000, 50'000'000}));
  CHECK(clocks_agree({0, 0}));
}

TEST_CASE("the clocks may differ by 2% of the span plus 1 ms, and no more", "[agent][clock]") {
  // 1 s: 20 ms + 1 ms allowed, either way.
  CHECK(clocks_agree({1'000'000'000, 1'021'000'000}));
  CHECK(clocks_agree({1'000'000'000, 979'000'000}));
  CHECK_FALSE(clocks_agree({1'000'000'000, 1'021'000'001}));
  CHECK_FALSE(clocks_agree({1'000'000'000, 978'999'999}));
}

TEST_CASE("on a short span the 1 ms term dominates", "[agent][clock]") {
  // 100 us: 2 us + 1 ms allowed.
  CHECK(clocks_agree({100'000, 1'102'000}));
  CHECK_FALSE(clocks_agree({100'000, 1'102'001}));
}

TEST_CASE("the TCG trap: a garbage MONOTONIC_RAW span fails the check", "[agent][clock]") {
  // environment.md: RAW said 197,578,371 s for a 0.48 s busy loop.
  CHECK_FALSE(clocks_agree({480'000'000, 197'578'371LL * 1'000'000'000}));
  CHECK_FALSE(clocks_agree({480'000'000, 0}));
  CHECK_FALSE(clocks_agree({-5, -5}));
}

TEST_CASE("the disagreement message names both clocks and both spans", "[agent][clock]") {
  CHECK(ks::agent::clock_disagreement({480'000'000, 7}) ==
        "clocks disagree: monotonic 480000000 ns vs monotonic_raw 7 ns");
}

TEST_CASE("a stopwatch on this machine measures a positive span its clocks agree on", "[agent][clock]") {
  ks::agent::Stopwatch watch;
  watch.start();
  volatile uint64_t sink = 0;
  for (int i = 0; i < 1'000'000; ++i) sink = sink + static_cast<uint64_t>(i);
  ClockSpan span = watch.stop();
  CHECK(span.monotonic_ns > 0);
  CHECK(span.monotonic_raw_ns >= span.monotonic_ns / 2);
  CHECK(clocks_agree(span));
}

TEST_CASE("hardware counters beside the clock: counted where the machine has a PMU, else why not",
          "[agent][clock]") {
  auto& counters = ks::agent::Counters::process();
  ks::agent::Stopwatch watch;
  watch.start();
  volatile uint64_t sink = 0;
  for (int i = 0; i < 1'000'000; ++i) sink = sink + static_cast<uint64_t>(i);
  ClockSpan span = watch.stop();
  if (!counters.unavailable().empty()) {
    // This kind of VM exposes no cpu PMU: the reason is what every round then records.
    WARN("hardware counters not checked here: " << counters.unavailable());
    CHECK_THAT(counters.unavailable(), Catch::StartsWith("perf_event_open: "));
    CHECK_FALSE(span.counters);
    return;
  }
  REQUIRE(span.counters);
  CHECK(span.counters->instructions >= 1'000'000);  // at least one per iteration
  CHECK(span.counters->cycles > 0);
}

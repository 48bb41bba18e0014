#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "stats/random.hpp"

TEST_CASE("stats: splitmix64 reproduces Vigna's reference outputs", "[stats]") {
  // splitmix64.c (prng.di.unimi.it), state 0: first three outputs.
  uint64_t state = 0;
  CHECK(ks::stats::splitmix64(state) == 0xe220a8397b1dcdafULL);
  CHECK(ks::stats::splitmix64(state) == 0x6e789e6aa1b965f4ULL);
  CHECK(ks::stats::splitmix64(state) == 0x06c45d188009454fULL);
}

TEST_CASE("stats: xoshiro256** reproduces the reference sequence", "[stats]") {
  // xoshiro256starstar.c (prng.di.unimi.it) with state {1, 2, 3, 4}: first ten outputs.
  ks::stats::Xoshiro256 rng(1, 2, 3, 4);
  const std::vector<uint64_t> expected{11520ULL,
                                       0ULL,
                                       1509978240ULL,
                                       1215971899390074240ULL,
                                       1216172134540287360ULL,
                                       607988272756665600ULL,
                                       16172922978634559625ULL,
                                       8476171486693032832ULL,
                                       10595114339597558777ULL,
                                       2904607092377533576ULL};
  for (auto value : expected) CHECK(rng.next() == value);
}

TEST_CASE("stats: uniform integers stay in range and cover it evenly", "[stats]") {
  ks::stats::Xoshiro256 rng(7);
  std::vector<int> counts(3, 0);
  for (int i = 0; i < 30000; ++i) {
    const auto v = rng.below(3);
    REQUIRE(v < 3);
    ++counts[v];
  }
  for (int c : counts) CHECK(c == Approx(10000).margin(400));  // ~4 sigma
  CHECK(rng.below(1) == 0);
  CHECK_THROWS(rng.below(0));
}

TEST_CASE("stats: the seed decides the stream", "[stats]") {
  ks::stats::Xoshiro256 a(42), b(42), c(43);
  const auto first = a.next();
  CHECK(first == b.next());
  CHECK(first != c.next());
}

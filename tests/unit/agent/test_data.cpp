#include <catch2/catch.hpp>
#include <vector>

#include "agent/data.hpp"

using ks::agent::SplitMix64;

TEST_CASE("splitmix64 produces the published reference sequence", "[agent][data]") {
  // First outputs for seed 0, as printed by Vigna's reference splitmix64.c.
  SplitMix64 g(0);
  CHECK(g.next() == 0xe220a8397b1dcdafULL);
  CHECK(g.next() == 0x6e789e6aa1b965f4ULL);
  CHECK(g.next() == 0x06c45d188009454fULL);
}

TEST_CASE("the data stream does not depend on how it is chunked", "[agent][data]") {
  std::vector<std::byte> whole(4096 * 3), pieces(4096 * 3);
  SplitMix64(ks::agent::kSeed).fill(whole);
  SplitMix64 g(ks::agent::kSeed);
  g.fill({pieces.data(), 4096});
  g.fill({pieces.data() + 4096, 8192});
  CHECK(whole == pieces);
}

TEST_CASE("the same seed gives the same bytes, another seed different ones", "[agent][data]") {
  std::vector<std::byte> a(1000), b(1000), c(1000);
  SplitMix64(7).fill(a);
  SplitMix64(7).fill(b);
  SplitMix64(8).fill(c);
  CHECK(a == b);
  CHECK(a != c);
}

TEST_CASE("a fill whose length is not a multiple of 8 uses the low bytes of one more word",
          "[agent][data]") {
  std::vector<std::byte> odd(13), full(16);
  SplitMix64(3).fill(odd);
  SplitMix64(3).fill(full);
  CHECK(std::equal(odd.begin(), odd.end(), full.begin()));
}

TEST_CASE("below(n) stays below n and reaches both ends", "[agent][data]") {
  SplitMix64 g(42);
  bool saw_zero = false, saw_top = false;
  for (int i = 0; i < 10000; ++i) {
    uint64_t v = g.below(16);
    REQUIRE(v < 16);
    saw_zero |= v == 0;
    saw_top |= v == 15;
  }
  CHECK(saw_zero);
  CHECK(saw_top);
}

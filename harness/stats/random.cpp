#include "stats/random.hpp"

#include <stdexcept>

#include "stats/normal.hpp"

namespace ks::stats {
namespace {

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

Xoshiro256::Xoshiro256(uint64_t seed) {
  for (auto& word : s_) word = splitmix64(seed);
}

Xoshiro256::Xoshiro256(uint64_t s0, uint64_t s1, uint64_t s2, uint64_t s3) : s_{s0, s1, s2, s3} {}

uint64_t Xoshiro256::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

uint64_t Xoshiro256::below(uint64_t n) {
  if (n == 0) throw std::invalid_argument("uniform integer below 0");
  const uint64_t incomplete = (0 - n) % n;  // 2^64 mod n
  const uint64_t limit = 0 - incomplete;    // 2^64 - incomplete (0 means "all of 2^64")
  for (;;) {
    const uint64_t x = next();
    if (limit == 0 || x < limit) return x % n;
  }
}

double normal_draw(Xoshiro256& rng) {
  return normal_quantile((static_cast<double>(rng.next() >> 11) + 0.5) * 0x1p-53);
}

}  // namespace ks::stats

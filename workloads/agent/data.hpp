#pragma once
// Deterministic data: splitmix64 (Steele, Lea & Flood, 2014). Tiny, fast, and the same
// sequence on every machine, so every round and every build writes byte-identical files.
// workloads/reference/plain_remap_loop.c carries a C copy of the same generator.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace ks::agent {

// The seed of every file and offset sequence the agent makes ("ksandwch").
inline constexpr uint64_t kSeed = 0x6b73616e64776368ULL;

class SplitMix64 {
 public:
  explicit constexpr SplitMix64(uint64_t seed) : state_(seed) {}

  constexpr uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  // A value in [0, n); the modulo bias is negligible for the n the agent uses (n << 2^64).
  constexpr uint64_t below(uint64_t n) { return next() % n; }

  // Fills OUT with the next bytes of the stream (host byte order, like the C reference).
  void fill(std::span<std::byte> out) {
    size_t i = 0;
    for (; i + 8 <= out.size(); i += 8) {
      uint64_t v = next();
      std::memcpy(out.data() + i, &v, 8);
    }
    if (i < out.size()) {
      uint64_t v = next();
      std::memcpy(out.data() + i, &v, out.size() - i);
    }
  }

 private:
  uint64_t state_;
};

}  // namespace ks::agent

#pragma once
// The bootstrap's random numbers, fully specified so that a bundle's analysis recomputes
// bit for bit on any machine and standard library (std:: distributions differ between
// libstdc++ and libc++): xoshiro256** (Blackman & Vigna), its state filled by splitmix64
// from the seed, and uniform integers by rejection.
#include <cstdint>

namespace ks::stats {

// splitmix64: advances `state` and returns the next output.
uint64_t splitmix64(uint64_t& state);

class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed);           // state[i] = splitmix64 outputs 1..4
  Xoshiro256(uint64_t s0, uint64_t s1, uint64_t s2, uint64_t s3);  // raw state (tests)

  uint64_t next();
  // Uniform in [0, n), n > 0: draws are rejected when they fall in the incomplete last
  // block of 2^64 mod n values, then reduced modulo n.
  uint64_t below(uint64_t n);

 private:
  uint64_t s_[4];
};

// A standard normal draw for simulations: the normal quantile of the uniform
// (top 53 bits + 0.5) / 2^53, which is never 0 or 1. One rng.next() per draw.
double normal_draw(Xoshiro256& rng);

}  // namespace ks::stats

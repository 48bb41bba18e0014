#pragma once
// Synthetic points and rows for the analysis tests: exact values where a test computes by
// hand, seeded noise where it checks a verdict path.
#include <cmath>
#include <string>
#include <vector>

#include "evidence/bundle.hpp"
#include "stats/random.hpp"

namespace ks::test {

inline evidence::Point make_point(int id, const std::string& arm, int block = 0) {
  evidence::Point p;
  p.id = id;
  p.block = block;
  p.arm = arm;
  p.status = "ok";
  return p;
}

inline evidence::Row make_row(int point, const std::string& arm, int round, double ns_per_op,
                              const std::string& workload = "clone") {
  evidence::Row r;
  r.point = point;
  r.arm = arm;
  r.round = round;
  r.workload = workload;
  r.ops = 10000;
  r.elapsed_ns = static_cast<uint64_t>(ns_per_op * 10000);
  r.ns_per_op = ns_per_op;
  return r;
}

// One point's rounds with the given values (round numbers from 1).
inline void add_rows(std::vector<evidence::Row>& rows, int point, const std::string& arm,
                     const std::vector<double>& values, const std::string& workload = "clone") {
  for (std::size_t i = 0; i < values.size(); ++i)
    rows.push_back(make_row(point, arm, static_cast<int>(i) + 1, values[i], workload));
}

// Seeded normal noise (Box-Muller over xoshiro256**), for synthetic experiments.
class Noise {
 public:
  explicit Noise(uint64_t seed) : rng_(seed) {}
  double normal() {
    const double u1 = (static_cast<double>(rng_.next() >> 11) + 1) * 0x1.0p-53;
    const double u2 = (static_cast<double>(rng_.next() >> 11) + 1) * 0x1.0p-53;
    return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
  }

 private:
  stats::Xoshiro256 rng_;
};

struct Synthetic {
  std::vector<evidence::Point> points;
  std::vector<evidence::Row> rows;
};

// An experiment over `arms` (one point each, in order): each point's level is `control` or
// `patched` times (1 + between * N(0,1)), each round that times (1 + within * N(0,1)).
inline Synthetic synthetic(const std::vector<std::string>& arms, double control, double patched,
                           double between, double within, int rounds, uint64_t seed,
                           const std::string& workload = "clone") {
  Noise noise(seed);
  Synthetic s;
  for (std::size_t i = 0; i < arms.size(); ++i) {
    const int id = static_cast<int>(i);
    s.points.push_back(make_point(id, arms[i], id / 2));
    const double level = (arms[i] == "patched" ? patched : control) * (1 + between * noise.normal());
    std::vector<double> values;
    for (int r = 0; r < rounds; ++r) values.push_back(level * (1 + within * noise.normal()));
    add_rows(s.rows, id, arms[i], values, workload);
  }
  return s;
}

// k blocks, each both arms (order alternating AB, BA: the test does not need a seeded order).
inline std::vector<std::string> confirm_arms(int blocks) {
  std::vector<std::string> arms;
  for (int b = 0; b < blocks; ++b) {
    if (b % 2 == 0) arms.insert(arms.end(), {"control", "patched"});
    else arms.insert(arms.end(), {"patched", "control"});
  }
  return arms;
}

}  // namespace ks::test

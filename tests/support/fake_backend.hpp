#pragma once
// A deterministic, seeded stand-in for the host and qemu backends, so the run pipeline
// (order, resume, continue_on_failure, the bundle written after every point, early stops,
// exit codes) is tested without root, QEMU or kernels.
//
// It lives with the tests on purpose: it is not in the table of backends
// (boot/backend.cpp), so no experiment file can select it, and no bundle a user holds can
// come from it. A test hands it to the pipeline through RunOptions::backend.
//
// Its agent records have the shape the real agent emits (a "workload", "start", the
// "round" records with warm-ups, "end" and "workload_exit" per workload, each tagged with
// "workload_id" as the backends do); the metric of each round is drawn log-normally around
// a true mean per arm and workload.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "boot/backend.hpp"

namespace ks::test {

// What a point does besides measuring, on demand.
enum class Fault {
  none,
  fail,          // status "failed" after the first workload's records (a workload exited non-zero)
  throw_error,   // run_point throws std::runtime_error
  interrupt,     // run_point throws Interrupted (Ctrl-C)
  hang,          // the point "times out": half of the first workload's rounds, then a failed
                 // result saying point_timeout_s ran out (no real waiting)
  unexpected,    // every measured round of the first workload reports unexpected ioctl results
};

struct FakeOptions {
  uint64_t seed = 1;
  // True mean of each workload's metric on the control arm, by workload id; a workload not
  // named gets 50,000 ns/op, 10,000 IOPS or 1 GB/s by its metric.
  std::map<std::string, double> level;
  // Multiplier of the true mean per arm and workload id: {"patched", {{"clone", 1.2}}} plants
  // a 20% slower clone (ns/op) in the patched arm. Absent: 1.
  std::map<std::string, std::map<std::string, double>> effect;
  double point_sd = 0.005;  // sd of ln(point mean) around the true mean: boot-to-boot noise
  double round_sd = 0.005;  // sd of ln(round) around its point's mean
  std::map<int, Fault> faults;  // by point index
  // Called first thing in every run_point (a test reads bundle.json there, say).
  std::function<void(const boot::PointContext&)> before_point;
};

class FakeBackend : public boot::Backend {
 public:
  explicit FakeBackend(FakeOptions options) : options_(std::move(options)) {}

  std::string name() const override { return "fake"; }
  nlohmann::json machine() override;
  boot::PointResult run_point(const boot::PointContext& context) override;
  std::string describe_point(const boot::PointContext& context) const override;

  // What happened, for the tests to assert on.
  std::vector<int> points_run;  // point indexes in the order run_point was called
  int cleanups = 0;             // point scopes unwound (returned or thrown)

  // The agent's records for one point, as run_point returns them (no faults). Pure.
  std::vector<nlohmann::json> agent_records(const boot::PointContext& context, Fault fault) const;

 private:
  FakeOptions options_;
};

}  // namespace ks::test

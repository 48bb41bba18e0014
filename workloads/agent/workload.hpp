#pragma once
// A workload: set up a round, time its operations (and nothing else), clean up.
// Each workload lives in its own file; make_workload() is the one table of them.
#include <memory>
#include <stdexcept>

#include "agent/options.hpp"
#include "agent/record.hpp"

namespace ks::agent {

// The workload cannot run here at all (e.g. the ioctl is not supported on this
// filesystem): the agent writes what it has, says so and exits 1.
class Unsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual Metric metric() const = 0;
  // The workload's own parameters (and fixed choices) for the start line.
  virtual Json params() const = 0;
  // Once, before the first round. Throws Unsupported or UserError.
  virtual void prepare() {}
  // Set-up (untimed), the timed operations, clean-up (untimed). Failures the round can
  // describe go into RoundResult::error; SystemError thrown from set-up is caught by the
  // caller and recorded the same way.
  virtual RoundResult run_round() = 0;
};

std::unique_ptr<Workload> make_workload(const Options& options);

std::unique_ptr<Workload> make_clone(const Options& options);
std::unique_ptr<Workload> make_dedupe(const Options& options);
std::unique_ptr<Workload> make_dio_randwrite(const Options& options);
std::unique_ptr<Workload> make_buffered_write(const Options& options);
std::unique_ptr<Workload> make_fio(const Options& options);

}  // namespace ks::agent

// clone: FICLONERANGE of range i of the source into the hole at range i of the destination.
#include <linux/fs.h>
#include <sys/ioctl.h>

#include <cstring>

#include "agent/clock.hpp"
#include "agent/remap_files.hpp"
#include "agent/workload.hpp"

namespace ks::agent {
namespace {

class Clone final : public Workload {
 public:
  explicit Clone(const Options& o)
      : dir_(o.dir), ops_(static_cast<uint64_t>(o.ops)), range_(static_cast<uint64_t>(o.range_bytes)) {}

  Metric metric() const override { return Metric::NsPerOp; }

  Json params() const override {
    return {{"ops", ops_}, {"range_bytes", range_}, {"destination", "hole"}, {"seed", kSeed}};
  }

  RoundResult run_round() override {
    RemapFiles files(dir_, "clone", ops_ * range_, RemapFiles::Destination::Hole);
    const int source = files.source();
    const int destination = files.destination();
    const uint64_t ops = ops_, range = range_;  // locals: the loop reads no object state
    uint64_t failed = 0;
    int first_errno = 0;

    Stopwatch watch;
    watch.start();
    for (uint64_t i = 0; i < ops; ++i) {
      const uint64_t offset = i * range;
      file_clone_range arg{.src_fd = source, .src_offset = offset, .src_length = range, .dest_offset = offset};
      if (::ioctl(destination, FICLONERANGE, &arg) != 0 && failed++ == 0) first_errno = errno;
    }
    RoundResult r;
    r.clock = watch.stop();

    r.ops = ops_;
    r.unexpected = failed;
    if (failed > 0) r.unexpected_detail = std::string("FICLONERANGE: ") + std::strerror(first_errno);
    if (failed == ops_) {
      r.error = "every FICLONERANGE failed: " + std::string(std::strerror(first_errno)) +
                " (is --dir on btrfs?)";
      r.fatal = means_unsupported(first_errno);
    }
    return r;
  }

 private:
  fs::path dir_;
  uint64_t ops_;
  uint64_t range_;
};

}  // namespace

std::unique_ptr<Workload> make_clone(const Options& options) { return std::make_unique<Clone>(options); }

}  // namespace ks::agent

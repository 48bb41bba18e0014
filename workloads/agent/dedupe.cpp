// dedupe: FIDEDUPERANGE of range i of the source against the identical range i of the
// destination; each op is expected to report FILE_DEDUPE_RANGE_SAME for the whole range.
#include <linux/fs.h>
#include <sys/ioctl.h>

#include <cstdlib>
#include <cstring>

#include "agent/clock.hpp"
#include "agent/remap_files.hpp"
#include "agent/workload.hpp"

namespace ks::agent {
namespace {

std::string describe_dedupe(int ioctl_errno, const file_dedupe_range_info& info, uint64_t range) {
  if (ioctl_errno) return std::string("FIDEDUPERANGE: ") + std::strerror(ioctl_errno);
  if (info.status < 0) return std::string("FIDEDUPERANGE status: ") + std::strerror(-info.status);
  if (info.status == FILE_DEDUPE_RANGE_DIFFERS) return "FIDEDUPERANGE status: FILE_DEDUPE_RANGE_DIFFERS";
  return "FIDEDUPERANGE deduped " + std::to_string(info.bytes_deduped) + " of " + std::to_string(range) + " bytes";
}

class Dedupe final : public Workload {
 public:
  explicit Dedupe(const Options& o)
      : dir_(o.dir), ops_(static_cast<uint64_t>(o.ops)), range_(static_cast<uint64_t>(o.range_bytes)) {}

  Metric metric() const override { return Metric::NsPerOp; }

  Json params() const override {
    return {{"ops", ops_}, {"range_bytes", range_}, {"destination", "same data"}, {"seed", kSeed}};
  }

  RoundResult run_round() override {
    RemapFiles files(dir_, "dedupe", ops_ * range_, RemapFiles::Destination::SameData);
    const int source = files.source();

    // The ioctl argument with its one destination, allocated once, outside the loop.
    std::unique_ptr<file_dedupe_range, decltype(&std::free)> storage(
        static_cast<file_dedupe_range*>(std::calloc(1, sizeof(file_dedupe_range) + sizeof(file_dedupe_range_info))),
        &std::free);
    if (!storage) throw std::bad_alloc();
    file_dedupe_range* const arg = storage.get();
    arg->src_length = range_;
    arg->dest_count = 1;
    file_dedupe_range_info& info = arg->info[0];
    info.dest_fd = files.destination();

    const uint64_t ops = ops_, range = range_;  // locals: the loop reads no object state
    uint64_t failed = 0;
    int first_errno = 0;
    file_dedupe_range_info first_info{};

    Stopwatch watch;
    watch.start();
    for (uint64_t i = 0; i < ops; ++i) {
      const uint64_t offset = i * range;
      arg->src_offset = offset;
      info.dest_offset = offset;
      info.bytes_deduped = 0;  // the kernel leaves it alone when the op fails
      const int ret = ::ioctl(source, FIDEDUPERANGE, arg);
      const bool same = ret == 0 && info.status == FILE_DEDUPE_RANGE_SAME && info.bytes_deduped == range;
      if (!same && failed++ == 0) {
        first_errno = ret == 0 ? 0 : errno;
        first_info = info;
      }
    }
    RoundResult r;
    r.clock = watch.stop();

    r.ops = ops_;
    r.unexpected = failed;
    if (failed > 0) r.unexpected_detail = describe_dedupe(first_errno, first_info, range_);
    if (failed == ops_) {
      r.error = "every FIDEDUPERANGE was unexpected; the first: " + *r.unexpected_detail + " (is --dir on btrfs?)";
      r.fatal = means_unsupported(first_errno ? first_errno : -first_info.status);
    }
    return r;
  }

 private:
  fs::path dir_;
  uint64_t ops_;
  uint64_t range_;
};

}  // namespace

std::unique_ptr<Workload> make_dedupe(const Options& options) { return std::make_unique<Dedupe>(options); }

}  // namespace ks::agent

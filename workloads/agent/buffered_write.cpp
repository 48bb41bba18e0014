// buffered-write: sequential buffered writes of BLOCK KiB (1 MiB like the fio runs in
// seeds/004) filling SIZE MiB, then one fsync, all inside the timed region.
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

#include "agent/clock.hpp"
#include "agent/scratch.hpp"
#include "agent/workload.hpp"

namespace ks::agent {
namespace {

class BufferedWrite final : public Workload {
 public:
  explicit BufferedWrite(const Options& o)
      : dir_(o.dir),
        file_(dir_ / "ks-buffered-write"),
        block_bytes_(static_cast<uint64_t>(o.block_kib) << 10),
        blocks_((static_cast<uint64_t>(o.size_mib) << 20) / block_bytes_) {}

  Metric metric() const override { return Metric::Throughput; }

  Json params() const override {
    return {{"size_mib", (blocks_ * block_bytes_) >> 20}, {"block_kib", block_bytes_ >> 10},
            {"fsync", "once, at the end, timed"}, {"file", file_.string()}, {"seed", kSeed}};
  }

  RoundResult run_round() override {
    struct Cleanup {
      const BufferedWrite& w;
      ~Cleanup() { remove_and_sync(w.dir_, {w.file_}); }
    } cleanup{*this};
    Fd fd = open_file(file_, O_WRONLY | O_CREAT | O_TRUNC);
    auto buffer = std::make_unique<std::byte[]>(block_bytes_);
    SplitMix64 data(kSeed);
    data.fill({buffer.get(), block_bytes_});
    const int f = fd.get();
    const void* block = buffer.get();
    const size_t length = block_bytes_;
    uint64_t bytes = 0, short_writes = 0;
    ssize_t first_short = 0;
    int first_errno = 0;
    int fsync_errno = 0;

    // Bytes written in each whole second of the writes (the round's own clock: the guest's
    // under the instruction clock), as the thread's "dips to 1100 MB/s" were seen.
    std::vector<double> per_second;
    constexpr int64_t kSecond = 1'000'000'000;
    uint64_t second_bytes = 0;

    Stopwatch watch;
    watch.start();
    int64_t second_start = watch.monotonic_start();
    for (uint64_t i = 0; i < blocks_; ++i) {
      ssize_t n = ::write(f, block, length);
      if (n > 0) {
        bytes += static_cast<uint64_t>(n);
        second_bytes += static_cast<uint64_t>(n);
      }
      if (int64_t now = clock_ns(CLOCK_MONOTONIC); now - second_start >= kSecond) {
        per_second.push_back(static_cast<double>(second_bytes) * kSecond / static_cast<double>(now - second_start));
        second_start = now;
        second_bytes = 0;
      }
      if (n != static_cast<ssize_t>(length) && short_writes++ == 0) {
        first_short = n;
        first_errno = errno;
      }
    }
    if (::fsync(f) != 0) fsync_errno = errno;
    RoundResult r;
    r.clock = watch.stop();

    r.ops = blocks_;
    r.bytes = bytes;
    r.per_second_bytes = std::move(per_second);
    r.unexpected = short_writes;
    if (short_writes > 0)
      r.unexpected_detail = first_short < 0 ? std::string("write: ") + std::strerror(first_errno)
                                            : "short write of " + std::to_string(first_short) + " of " +
                                                  std::to_string(length) + " bytes";
    if (fsync_errno) r.error = "fsync " + file_.string() + ": " + std::strerror(fsync_errno);
    else if (short_writes == blocks_) r.error = "every write was short: " + *r.unexpected_detail;
    return r;
  }

 private:
  fs::path dir_;
  fs::path file_;
  uint64_t block_bytes_;
  uint64_t blocks_;
};

}  // namespace

std::unique_ptr<Workload> make_buffered_write(const Options& options) {
  return std::make_unique<BufferedWrite>(options);
}

}  // namespace ks::agent

// dio-randwrite: the fio job of seeds/003 without fio. JOBS threads, each with its own
// io_uring at IODEPTH, write 4 KiB blocks with O_DIRECT at random aligned offsets into the
// SAME file in a NOCOW directory, for RUNTIME seconds or, with --ios, until they have written
// that many blocks together (the same work every round: what an instruction clock needs).
// All threads share one file on purpose: the SB_NOSEC regression serialises DIO writers on
// that file's inode lock.
#include <fcntl.h>
#include <liburing.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <latch>
#include <thread>
#include <vector>

#include "agent/clock.hpp"
#include "agent/scratch.hpp"
#include "agent/workload.hpp"
#include "proc/runner.hpp"
#include "util/error.hpp"

namespace ks::agent {
namespace {

constexpr unsigned kBlock = 4096;
// Like the seed's job (force_async=4): every 4th write is issued with IOSQE_ASYNC.
constexpr uint64_t kForceAsync = 4;

struct JobResult {
  uint64_t completions = 0;
  uint64_t unexpected = 0;
  uint64_t bytes = 0;
  int first_bad_res = 0;     // the first completion whose res was not 4096
  std::string error;         // this job could not start, or io_uring failed
  bool setup_unsupported = false;
};

// What the threads share: three rendezvous points and the deadline.
struct Rendezvous {
  explicit Rendezvous(std::ptrdiff_t jobs) : ready(jobs), done(jobs) {}
  std::latch ready;    // every job has its ring, buffers and file open
  std::latch go{1};    // the timer has started; deadline is set
  std::latch done;     // every job has drained its ring
  int64_t deadline_ns = 0;  // CLOCK_MONOTONIC; written before go, read after it
};

// One job's resources, released when it goes out of scope (after `done`, so untimed).
struct JobResources {
  io_uring ring{};
  bool ring_ready = false;
  std::byte* buffers = nullptr;
  Fd fd;
  ~JobResources() {
    if (ring_ready) io_uring_queue_exit(&ring);
    std::free(buffers);
  }
};

// QUOTA: the writes this job submits in the round; 0: until the deadline.
void run_job(const fs::path& file, uint64_t blocks, unsigned iodepth, uint64_t quota, uint64_t seed,
             Rendezvous& meet, JobResult& result) {
  JobResources res;
  try {
    int fd = ::open(file.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0) {
      result.setup_unsupported = errno == EINVAL;  // the filesystem refuses O_DIRECT
      throw SystemError("open " + file.string() + " with O_DIRECT", errno);
    }
    res.fd = Fd(fd);
    int ret = io_uring_queue_init(iodepth, &res.ring, 0);
    if (ret < 0) {
      result.setup_unsupported = ret == -ENOSYS || ret == -EPERM;
      throw SystemError("io_uring_queue_init(" + std::to_string(iodepth) + ")", -ret);
    }
    res.ring_ready = true;
    void* memory = nullptr;
    if (int err = posix_memalign(&memory, kBlock, size_t{iodepth} * kBlock)) throw SystemError("posix_memalign", err);
    res.buffers = static_cast<std::byte*>(memory);
    SplitMix64 data(seed);
    data.fill({res.buffers, size_t{iodepth} * kBlock});
  } catch (const std::exception& e) {
    if (result.error.empty()) result.error = e.what();
  }
  std::vector<uint64_t> free_slots;
  free_slots.reserve(iodepth);
  for (unsigned slot = iodepth; slot-- > 0;) free_slots.push_back(slot);
  meet.ready.count_down();
  meet.go.wait();
  if (!result.error.empty()) {
    meet.done.count_down();
    return;
  }

  // The timed region, in fio's rhythm (iodepth_batch_submit=1, iodepth_batch_complete_min=1):
  // every write goes in with its own io_uring_enter; with IODEPTH in flight, wait for at
  // least one completion, reap all there are, and resubmit their slots one by one. At the
  // deadline (or the quota), stop submitting and drain.
  SplitMix64 offsets(seed ^ 0x6f666673ULL);
  uint64_t queued = 0;
  unsigned in_flight = 0;
  bool stopping = false;
  auto submit = [&](uint64_t slot) {
    io_uring_sqe* sqe = io_uring_get_sqe(&res.ring);  // never null: at most IODEPTH outstanding
    io_uring_prep_write(sqe, res.fd.get(), res.buffers + slot * kBlock, kBlock, offsets.below(blocks) * kBlock);
    sqe->user_data = slot;
    if (++queued % kForceAsync == 0) sqe->flags |= IOSQE_ASYNC;
    if (queued == quota) stopping = true;
    int ret = io_uring_submit(&res.ring);
    if (ret == 1) {
      ++in_flight;
    } else {
      result.error = "io_uring_submit: " + std::string(ret < 0 ? std::strerror(-ret) : "submitted nothing");
      stopping = true;
    }
  };
  while (true) {
    while (!stopping && !free_slots.empty()) {
      uint64_t slot = free_slots.back();
      free_slots.pop_back();  // no allocation: capacity IODEPTH was reserved before the timer
      submit(slot);
    }
    if (in_flight == 0) break;
    io_uring_cqe* cqe;
    int ret = io_uring_wait_cqe(&res.ring, &cqe);  // enters the kernel only when none is ready
    if (ret == -EINTR) continue;
    if (ret < 0) {
      result.error = std::string("io_uring_wait_cqe: ") + std::strerror(-ret);
      break;
    }
    if (!stopping && ((quota == 0 && clock_ns(CLOCK_MONOTONIC) >= meet.deadline_ns) || proc::interrupted()))
      stopping = true;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&res.ring, head, cqe) {
      ++seen;
      --in_flight;
      ++result.completions;
      if (cqe->res == static_cast<int>(kBlock)) {
        result.bytes += kBlock;
      } else if (result.unexpected++ == 0) {
        result.first_bad_res = cqe->res;
      }
      free_slots.push_back(cqe->user_data);
    }
    io_uring_cq_advance(&res.ring, seen);
  }
  meet.done.count_down();
}

std::string describe_res(int res) {
  if (res < 0) return std::strerror(-res);
  return "wrote " + std::to_string(res) + " of " + std::to_string(kBlock) + " bytes";
}

class DioRandwrite final : public Workload {
 public:
  explicit DioRandwrite(const Options& o)
      : nocow_dir_(fs::path(o.dir) / "nocow"),
        file_(nocow_dir_ / "fiofile"),
        iodepth_(static_cast<unsigned>(o.iodepth)),
        jobs_(static_cast<unsigned>(o.jobs)),
        file_bytes_(static_cast<uint64_t>(o.file_size_mib) << 20),
        runtime_ns_(std::llround(o.runtime_s * 1e9)),
        ios_(static_cast<uint64_t>(o.ios)) {}

  Metric metric() const override { return Metric::Throughput; }

  Json params() const override {
    Json p{{"iodepth", iodepth_},         {"jobs", jobs_},
           {"file_size_mib", file_bytes_ >> 20},
           {"block_size", kBlock},        {"force_async", kForceAsync},
            {"submit", "one write per io_uring_enter, like fio's default iodepth_batch_submit=1"},
           {"file", file_.string()},      {"seed", kSeed}};
    if (ios_ > 0)
      p["ios"] = ios_;
    else
      p["runtime_s"] = static_cast<double>(runtime_ns_) / 1e9;
    return p;
  }

  void prepare() override { make_nocow_dir(nocow_dir_); }

  RoundResult run_round() override {
    struct Cleanup {
      const DioRandwrite& w;
      ~Cleanup() { remove_and_sync(w.nocow_dir_, {w.file_}); }
    } cleanup{*this};
    lay_out_file();

    const uint64_t blocks = file_bytes_ / kBlock;
    std::vector<JobResult> results(jobs_);
    Rendezvous meet(jobs_);
    std::vector<std::jthread> threads;
    try {
      for (unsigned j = 0; j < jobs_; ++j)
        threads.emplace_back(run_job, std::cref(file_), blocks, iodepth_, job_quota(j), kSeed + j,
                             std::ref(meet), std::ref(results[j]));
    } catch (...) {
      meet.go.count_down();  // deadline 0: the jobs already started stop at once
      threads.clear();
      throw;
    }

    meet.ready.wait();
    Stopwatch watch;
    watch.start();
    meet.deadline_ns = watch.monotonic_start() + runtime_ns_;
    meet.go.count_down();
    meet.done.wait();
    RoundResult r;
    r.clock = watch.stop();
    threads.clear();  // join

    int first_bad_res = 0;
    for (auto& job : results) {
      r.ops += job.completions;
      r.unexpected += job.unexpected;
      r.bytes += job.bytes;
      if (job.unexpected > 0 && first_bad_res == 0) first_bad_res = job.first_bad_res;
      if (!job.error.empty() && !r.error) r.error = job.error;
      r.fatal = r.fatal || job.setup_unsupported;
    }
    if (r.unexpected > 0) r.unexpected_detail = "write completion: " + describe_res(first_bad_res);
    if (!r.error && r.ops > 0 && r.unexpected == r.ops) {
      r.error = "every write failed: " + describe_res(first_bad_res);
      r.fatal = first_bad_res == -EINVAL || first_bad_res == -EOPNOTSUPP;
    }
    if (!r.error && r.ops == 0) r.error = "no write completed";
    return r;
  }

 private:
  // The whole file written once before timing, so DIO overwrites existing NOCOW extents.
  void lay_out_file() const {
    Fd fd = open_file(file_, O_WRONLY | O_CREAT | O_TRUNC);
    if (!is_nocow(fd.get()))
      throw SystemError("create " + file_.string(), "the file did not inherit NOCOW from its directory");
    SplitMix64 data(kSeed);
    write_data(fd.get(), file_, file_bytes_, data);
    fsync_file(fd.get(), file_);
  }

  // Job J's share of the round's writes: IOS split as evenly as it goes, the first jobs
  // taking the remainder. 0: time-based.
  uint64_t job_quota(unsigned j) const {
    if (ios_ == 0) return 0;
    return ios_ / jobs_ + (j < ios_ % jobs_ ? 1 : 0);
  }

  fs::path nocow_dir_;
  fs::path file_;
  unsigned iodepth_;
  unsigned jobs_;
  uint64_t file_bytes_;
  int64_t runtime_ns_;
  uint64_t ios_;
};

}  // namespace

std::unique_ptr<Workload> make_dio_randwrite(const Options& options) {
  return std::make_unique<DioRandwrite>(options);
}

}  // namespace ks::agent

#include "support/fake_backend.hpp"

#include <cmath>
#include <fmt/format.h>

#include "boot/phases.hpp"
#include "stats/random.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::test {

using nlohmann::json;

namespace {

constexpr double kCanaryNs = 500000;  // the CPU-bound canary timed beside each round
constexpr uint64_t kBlockSize = 4096;  // dio-randwrite's block size

double default_level(const std::string& metric) {
  if (metric == "ns_per_op") return 50000;
  if (metric == "iops") return 10000;
  return 1e9;  // bytes_per_s
}

// One independent stream per (seed, point, workload): a point draws the same numbers
// whatever ran before it, so a resumed run measures what the whole run would have.
stats::Xoshiro256 stream(uint64_t seed, int point, size_t workload) {
  uint64_t state = seed;
  uint64_t mixed = stats::splitmix64(state);
  state = mixed ^ (static_cast<uint64_t>(point) + 1) * 0x9E3779B97F4A7C15ULL;
  mixed = stats::splitmix64(state);
  state = mixed ^ (static_cast<uint64_t>(workload) + 1) * 0xD1B54A32D192ED03ULL;
  return stats::Xoshiro256(stats::splitmix64(state));
}

// One "round" record for a true metric VALUE, as the agent prints it.
json round_record(const experiment::Experiment& e, const experiment::Workload& w, int round, bool warmup,
                  double value, double canary_ns) {
  json r{{"type", "round"}, {"workload", w.name}, {"round", round}, {"warmup", warmup}};
  const auto metric = w.metric();
  uint64_t ops = 0, elapsed_ns = 0;
  if (metric == "ns_per_op") {
    ops = w.ops;
    elapsed_ns = static_cast<uint64_t>(std::llround(value * static_cast<double>(ops)));
    r["ns_per_op"] = static_cast<double>(elapsed_ns) / static_cast<double>(ops);
  } else if (metric == "iops") {
    elapsed_ns = static_cast<uint64_t>(std::llround(w.runtime_s * 1e9));
    ops = static_cast<uint64_t>(std::llround(value * w.runtime_s));
    const double iops = static_cast<double>(ops) / (static_cast<double>(elapsed_ns) / 1e9);
    r["iops"] = iops;
    r["bytes_per_s"] = iops * kBlockSize;
  } else {  // bytes_per_s: buffered-write
    const double bytes = static_cast<double>(w.size_mib << 20);
    ops = (w.size_mib << 20) / (w.block_kib << 10);
    elapsed_ns = static_cast<uint64_t>(std::llround(bytes / value * 1e9));
    r["bytes_per_s"] = bytes / (static_cast<double>(elapsed_ns) / 1e9);
  }
  r["ops"] = ops;
  r["elapsed_ns"] = elapsed_ns;
  r["expected_match_ratio"] = 100.0;
  r["unexpected_results"] = 0;
  r["cpu"] = e.cpu < 0 ? 0 : e.cpu;
  r["canary_ns"] = static_cast<uint64_t>(std::llround(canary_ns));
  r["clock"] = {{"check", "CLOCK_MONOTONIC_RAW"}, {"elapsed_check_ns", elapsed_ns + 3000}, {"agree", true}};
  return r;
}

// Counts the point's scope as cleaned up however it is left.
struct CleanupCounter {
  int& count;
  ~CleanupCounter() { ++count; }
};

}  // namespace

json FakeBackend::machine() {
  // Stable across runs, so --resume finds the machine the finished points ran on.
  return {{"fake", true}, {"cpu_model", "fake CPU"}, {"cores", 2}, {"kernel_release", "fake"},
          {"virtualization", "none"}};
}

std::vector<json> FakeBackend::agent_records(const boot::PointContext& ctx, Fault fault) const {
  const auto& e = ctx.experiment;
  std::vector<json> records;
  auto emit = [&](json record, const experiment::Workload& w) {
    record["workload_id"] = w.id();  // as the backends tag every line
    records.push_back(std::move(record));
  };
  for (size_t wi = 0; wi < e.workloads.size(); ++wi) {
    const auto& w = e.workloads[wi];
    const bool first = wi == 0;
    auto rng = stream(options_.seed, ctx.point, wi);
    double truth = default_level(w.metric());
    if (auto it = options_.level.find(w.id()); it != options_.level.end()) truth = it->second;
    if (auto arm = options_.effect.find(ctx.arm.name); arm != options_.effect.end())
      if (auto it = arm->second.find(w.id()); it != arm->second.end()) truth *= it->second;
    const double point_mean = truth * std::exp(options_.point_sd * stats::normal_draw(rng));

    emit({{"type", "workload"}, {"id", w.id()}}, w);
    emit({{"type", "start"},
          {"workload", w.name},
          {"params", {{"rounds", e.rounds}, {"warmup", e.warmup_rounds}, {"cpu", e.cpu}, {"seed", e.seed}}},
          {"cpu_requested", e.cpu},
          {"kernel_release", "fake-" + ctx.arm.name},
          {"clocksource", "tsc"},
          {"agent_version", "fake"}},
         w);
    const auto measured = static_cast<int>(fault == Fault::hang && first ? e.rounds / 2 : e.rounds);
    for (int i = 0; i < static_cast<int>(e.warmup_rounds) + measured; ++i) {
      const bool warmup = i < static_cast<int>(e.warmup_rounds);
      const double value = point_mean * std::exp(options_.round_sd * stats::normal_draw(rng));
      const double canary = kCanaryNs * std::exp(0.01 * stats::normal_draw(rng));
      auto r = round_record(e, w, warmup ? i : i - static_cast<int>(e.warmup_rounds), warmup, value, canary);
      if (fault == Fault::unexpected && first && !warmup) {
        r["unexpected_results"] = 3;
        r["expected_match_ratio"] = 100.0 * (static_cast<double>(w.ops) - 3) / static_cast<double>(w.ops);
      }
      emit(std::move(r), w);
    }
    if (fault == Fault::hang && first) return records;  // killed mid-workload: no "end"
    const bool exits_nonzero = fault == Fault::fail && first;
    emit({{"type", "end"}, {"rounds", e.rounds}, {"warmup", e.warmup_rounds}, {"failed_rounds", 0}}, w);
    emit({{"type", "workload_exit"}, {"id", w.id()}, {"status", exits_nonzero ? 1 : 0}}, w);
    if (exits_nonzero) return records;
  }
  return records;
}

boot::PointResult FakeBackend::run_point(const boot::PointContext& ctx) {
  CleanupCounter cleanup{cleanups};
  points_run.push_back(ctx.point);
  if (options_.before_point) options_.before_point(ctx);
  auto it = options_.faults.find(ctx.point);
  const Fault fault = it == options_.faults.end() ? Fault::none : it->second;
  if (fault == Fault::throw_error)
    throw std::runtime_error(fmt::format("fake: planted exception at point {}", ctx.point));
  if (fault == Fault::interrupt) throw Interrupted();

  boot::PointResult result;
  result.kernel_release = "fake-" + ctx.arm.name;
  result.agent_records = agent_records(ctx, fault);
  result.storage = {{"kind", "fake"}, {"device", "none"}, {"size_mib", ctx.experiment.storage.size_mib}};
  result.environment = {{"cpu", ctx.experiment.cpu}, {"clocksource", "tsc"}, {"governor", nullptr}};
  result.health = {{"findings", json::array()}};
  fs::create_directories(ctx.point_dir);
  std::string lines;
  for (auto& r : result.agent_records) lines += r.dump() + "\n";
  write_file_atomic(ctx.point_dir / "results.jsonl", lines);
  // The phases as the real backends report them from the same records (boot/phases.hpp).
  boot::report_phase(ctx, {"mkfs", true});
  boot::PhaseTracker phases(ctx.experiment);
  for (auto& phase : phases.feed(lines)) boot::report_phase(ctx, phase);
  result.log = fs::relative(ctx.point_dir / "results.jsonl", ctx.bundle_dir).string();
  const auto& first = ctx.experiment.workloads.front().id();
  if (fault == Fault::fail) {
    result.status = "failed";
    result.failure = "workload " + first + ": exited with status 1 (fake: planted failure)";
  } else if (fault == Fault::hang) {
    result.status = "failed";
    result.failure = "workload " + first + ": timed out after point_timeout_s = " +
                     std::to_string(ctx.experiment.point_timeout_s) + " s (fake: planted hang)";
  }
  return result;
}

std::string FakeBackend::describe_point(const boot::PointContext& ctx) const {
  return fmt::format("  fake: {} workload(s) of {} rounds on arm {}\n", ctx.experiment.workloads.size(),
                     ctx.experiment.rounds, ctx.arm.name);
}

}  // namespace ks::test

#include "pipeline/calibration.hpp"

#include <cmath>

#include "analysis/samples.hpp"
#include "evidence/clock.hpp"
#include "experiment/backends.hpp"
#include "experiment/experiment.hpp"
#include "pipeline/bundle_file.hpp"
#include "source/source.hpp"
#include "stats/summary.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"
#include "util/ownership.hpp"

namespace ks::pipeline {
namespace {

using nlohmann::json;

json at(const json& j, const char* pointer) {
  auto p = json::json_pointer(pointer);
  return j.is_object() && j.contains(p) ? j[p] : json();
}

}  // namespace

double WorkloadNoise::sd_block_log_ratio() const { return std::sqrt(2.0) * sd_log_point; }

json calibration_identity(const evidence::Bundle& b) {
  return {{"cpu_model", at(b.machine, "/cpu_model")},
          {"cores", at(b.machine, "/cores")},
          {"host_kernel", at(b.machine, "/kernel_release")},
          {"backend", b.backend},
          {"accelerator", at(b.machine, "/accelerator/used")},
          // Instructions and nanoseconds have spreads of their own.
          {"clock", evidence::bundle_clock(b).name},
          // The control kernel the spread was measured on (none on the host backend: the
          // running kernel, named by host_kernel).
          {"control_kernel", at(b.builds, "/control/bzimage/sha256")}};
}

std::string calibration_key(const json& identity) { return sha256_hex(identity.dump()).substr(0, 16); }

std::string workload_shape_key(const experiment::Experiment& e, const experiment::Workload& w) {
  json shape{{"name", w.name},           {"ops", w.ops},
             {"range_bytes", w.range_bytes}, {"iodepth", w.iodepth},
             {"jobs", w.jobs},           {"file_size_mib", w.file_size_mib},
             {"runtime_s", w.runtime_s}, {"ios", w.ios},
             {"block_kib", w.block_kib},
             {"size_mib", w.size_mib},   {"fio_job", w.fio_job},
             {"rounds", e.rounds},       {"warmup_rounds", e.warmup_rounds},
             {"cpu", e.cpu},             {"storage", {e.storage.kind, e.storage.size_mib, e.storage.mkfs_options,
                                                      e.storage.mount_options}},
             {"guest", {e.qemu.vcpus, e.qemu.memory_mib}},
             // The point summary the spread is of: a calibration of medians (before
             // 2026-12) does not size a run that reads best rounds.
             {"point_summary", "best round"}};
  return w.id() + "-" + sha256_hex(shape.dump()).substr(0, 12);
}

Calibration calibration_from_bundle(const experiment::Experiment& e, const evidence::Bundle& b) {
  Calibration c;
  c.identity = calibration_identity(b);
  c.key = calibration_key(c.identity);
  for (auto& w : e.workloads) {
    // The point summaries a confirm run's analysis reads: best undisturbed rounds, of the
    // points it would not drop.
    std::vector<double> logs;
    for (auto& sample : analysis::measured_samples(b.points, b.rows, w.id(), w.metric()))
      if (sample.arm == "control" && !sample.values.empty() && !sample.disturbed_throughout)
        if (double best = analysis::point_best(sample, w.higher_is_better()); best > 0) logs.push_back(std::log(best));
    if (logs.size() < 2) continue;  // no spread from one point
    c.workloads[workload_shape_key(e, w)] = {w.metric(), static_cast<int>(logs.size()),
                                             stats::sample_stddev(logs)};
  }
  return c;
}

json calibration_experiment(json e, int points) {
  e["name"] = e.value("name", std::string("experiment")) + "-calibration";
  e["scheme"] = "screen";
  e["order"] = std::vector<std::string>(static_cast<size_t>(points), "control");
  for (auto key : {"blocks", "min_blocks", "max_blocks", "replacement_blocks", "target_mde_pct", "direct_hits", "profile"})
    e.erase(key);  // a calibration measures spread: no passes after the rounds
  return e;
}

std::optional<Calibration> calibrate(RunOptions o, int points) {
  auto original = experiment::parse_file(o.experiment_file);
  experiment::require_one_run_per_process(original, "calibrate");
  o.experiment = calibration_experiment(original.raw, points);
  o.print_report = false;  // an A/A run of one arm has no verdict worth printing
  run(o);

  auto bundle_file = o.out_dir / "bundle.json";
  auto c = calibration_from_bundle(original, load_bundle(bundle_file));
  if (c.workloads.empty()) return std::nullopt;
  c.created_at = now_utc_iso8601();
  c.bundle = bundle_file.string();
  store_calibration(source::default_cache_root(), c);
  return c;
}

fs::path calibration_file(const fs::path& cache_root, const std::string& key) {
  return cache_root / "calibration" / (key + ".json");
}

void store_calibration(const fs::path& cache_root, const Calibration& c) {
  auto file = calibration_file(cache_root, c.key);
  fs::create_directories(file.parent_path());
  write_file_atomic(file, json(c).dump(2) + "\n");
}

std::optional<Calibration> load_calibration(const fs::path& cache_root, const std::string& key) {
  auto text = read_cache_file(calibration_file(cache_root, key), size_t(16) << 20);
  if (!text) return std::nullopt;
  try {
    return json::parse(*text).get<Calibration>();
  } catch (const json::exception& err) {
    throw UserError("calibration file " + calibration_file(cache_root, key).string() + " is unreadable: " + err.what(),
                    "remove it and run `ksandwich calibrate` again");
  }
}

}  // namespace ks::pipeline

#pragma once
// Noise calibration: an A/A run of the control arm alone, n points, whose between-point
// spread of each workload sizes later confirm runs in advance (statistics.md). A spread
// is only valid where it was measured, so it is stored under a key of everything it
// depends on: the machine (CPU model, host kernel), the backend and its accelerator, the
// control kernel's build, and the workload's shape (its parameters and the run's rounds).
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "evidence/bundle.hpp"
#include "experiment/experiment.hpp"
#include "pipeline/run.hpp"

namespace ks::pipeline {

namespace fs = std::filesystem;

struct WorkloadNoise {
  std::string metric;
  int points = 0;              // control points that measured it
  double sd_log_point = 0;     // sd of ln(point median) across points (n - 1)
  double sd_block_log_ratio() const;  // sqrt(2) sd_log_point: one block's ln(P/C)
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(WorkloadNoise, metric, points, sd_log_point)

struct Calibration {
  std::string key;
  std::string created_at;
  std::string bundle;          // the A/A run's bundle, where the figures can be checked
  nlohmann::json identity;     // what the key was made of, readable
  std::map<std::string, WorkloadNoise> workloads;  // by workload shape key
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Calibration, key, created_at, bundle, identity, workloads)

// What a calibration depends on, from a bundle (machine, backend, accelerator, control
// build). Pure.
nlohmann::json calibration_identity(const evidence::Bundle& bundle);
// The key of that identity. Pure.
std::string calibration_key(const nlohmann::json& identity);
// The shape of one workload of an experiment: its parameters, rounds and warm-up. Pure.
std::string workload_shape_key(const experiment::Experiment& e, const experiment::Workload& w);

// The spread of every workload over the bundle's ok control points. Pure.
Calibration calibration_from_bundle(const experiment::Experiment& e, const evidence::Bundle& bundle);

// The experiment `calibrate` runs: the control arm alone, `points` times, as a screen (an
// A/A run). Pure.
nlohmann::json calibration_experiment(nlohmann::json experiment, int points);

// Runs the A/A experiment of the options' experiment file and stores the spread it
// measured in the cache, dated and pointing at its bundle. Nothing is stored (nullopt)
// when fewer than two control points measured a workload.
std::optional<Calibration> calibrate(RunOptions options, int points);

// <cache>/calibration/<key>.json
fs::path calibration_file(const fs::path& cache_root, const std::string& key);
void store_calibration(const fs::path& cache_root, const Calibration& c);
std::optional<Calibration> load_calibration(const fs::path& cache_root, const std::string& key);

}  // namespace ks::pipeline

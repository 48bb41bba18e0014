#pragma once
// What this machine's earlier runs tell about a new one: how long a point took. Read from
// the bundles of finished runs in one results directory (where `run` puts them by default);
// nothing is written.
#include <filesystem>
#include <optional>
#include <string>

#include "experiment/experiment.hpp"
#include "pipeline/kernels.hpp"

namespace ks::pipeline {

struct PastPoints {
  std::filesystem::path dir;  // the run's directory
  size_t points = 0;          // its points that finished
  double seconds = 0;         // their mean wall clock, boot included
  std::string accelerator;    // machine.accelerator.used, "" when it has none (host, bare metal)
};

// The newest finished run (its bundle has its timings: the last write) of the experiment NAME
// on BACKEND among the run directories in RESULTS_DIR, by bundle.json's time; of the newest
// kMaxRunsLooked at. Links are not followed; unreadable or foreign bundles are passed over.
inline constexpr size_t kMaxRunsLooked = 20;
std::optional<PastPoints> past_points(const std::filesystem::path& results_dir, const std::string& name,
                                      const std::string& backend);

// How long a run of E with POINTS points would take here, from what this machine's earlier
// builds (KERNELS: the dry run's look into the cache) and runs (in RESULTS_DIR) took: "about
// 14m10s: kernels 10m12s, up to 12 points of about 20s (as in DIR, under tcg)", what no record
// tells named instead. One line, without its newline.
std::string describe_time(const experiment::Experiment& e, size_t points, const KernelPlan& kernels,
                          const std::filesystem::path& results_dir);

}  // namespace ks::pipeline

#pragma once
// `ksandwich run`: experiment -> plan -> (builds) -> points in order -> stats -> bundle ->
// reports. The bundle is written after every point, so a crash keeps what was measured,
// and `--resume DIR` reruns only the points that did not finish.
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "evidence/bundle.hpp"
#include "experiment/experiment.hpp"
#include "report/report.hpp"

namespace ks::boot {
class Backend;
}

namespace ks::pipeline {

namespace fs = std::filesystem;

struct RunOptions {
  fs::path experiment_file;
  // When set, the experiment itself (experiment_file still says where relative paths in it
  // resolve): `calibrate` runs a derived experiment that exists in no file.
  std::optional<nlohmann::json> experiment;
  fs::path out_dir;
  bool resume = false;
  // With resume: the same run going on after a bare-metal kernel switch (the boot hook),
  // not a new attempt: points that failed stay failed instead of running again.
  bool after_switch = false;
  bool dry_run = false;       // print the plan and the commands, touch nothing
  bool print_report = true;   // the text report on stdout at the end (calibrate prints its own)
  report::Options reply;      // the tester and thread for the reply block
  nlohmann::json tool;        // name, version, git_revision, command_line
  fs::path agent;             // ksandwich-agent
  fs::path repo_dir;          // where workloads/fio, configs/, kernel-patches/ live
  // Tests only (tests/support/fake_backend.hpp): run the points on this backend instead of
  // the experiment's, skipping the machine preflight (root, tools, devices) and the machine
  // lock that belong to the real backends. The output directory and --resume checks still apply.
  std::shared_ptr<boot::Backend> backend;
  fs::path state_dir = "/run/ksandwich";  // the machine lock and the registry of runs (host_changes.hpp)
  // Where the progress lines go (points done of planned, each point's phase); tests read them.
  std::FILE* progress = stderr;
  std::optional<bool> progress_live;  // a terminal's updating line; default: whether `progress` is one
};

// Returns the process exit code (0 ok, 1 material regression, 3 a point failed).
// Throws UserError for bad input or environment (exit 2), before anything is touched.
int run(const RunOptions& options);

// What --resume checks of the run directory DIR once its bundle B is read and its experiment
// E parsed: the points follow the plan E gives (all of them, or the blocks before an early
// stop), the plan is E's, the run-id intact. UserError, naming what is damaged, when not.
void check_resumable(const evidence::Bundle& b, experiment::Experiment e, const fs::path& dir);

}  // namespace ks::pipeline

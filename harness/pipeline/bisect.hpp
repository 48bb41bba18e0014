#pragma once
// `ksandwich bisect`: find the commit of a git source that made an experiment slower.
//
// The commits are computed here (git rev-list --first-parent good..bad), not by driving
// `git bisect`: the user's tree is never checked out or given refs/bisect/*, and the state
// that matters (every step's verdict and bundle) lives in DIR/bisect.json, so rerunning the
// same command continues where an interruption stopped it.
//
// Every kernel is the candidate as the patched arm's `commit` (arms.patched.commit) of a
// confirm experiment whose control arm is the good commit: built as good + `git diff good
// candidate` from the good kernel's finished tree, so a step is an incremental build (plus
// ccache), and the matched-build audit holds (same source, config and toolchain; only the
// commit's diff differs).
//
// Fan-out: `--write-experiments DIR` writes each commit's step experiment instead of
// measuring (`ksandwich submit --slurm DIR/*.json` runs them all at once, one node each),
// and `--measured DIR` lets a bisection take a step's run from any bundle under DIR of
// exactly that step's experiment (copied into the step's directory) instead of measuring.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "bisect/bisect.hpp"

namespace ks::pipeline {

namespace fs = std::filesystem;

struct BisectOptions {
  fs::path experiment_file;
  fs::path out_dir;          // holds bisect.json, reply.txt and steps/NN-<sha>/ (one run each)
  std::string good, bad;     // commits, tags or branches of the experiment's git source
  std::string reported_by;   // "Name <email>" for the reply's Reported-by:, or empty
  nlohmann::json tool;       // as RunOptions
  fs::path agent;
  fs::path repo_dir;
  std::vector<fs::path> measured;  // directories holding runs of step experiments to take
};

// Exit code: 1 the first bad commit was found (a material regression, named); 0 bad is not
// worse than good (nothing to bisect); 3 the first comparison was INVALID; 4 it was
// inconclusive, or skipped commits leave several suspects. Throws UserError (exit 2) for
// bad input, Interrupted (130) when stopped: rerun the same command to continue.
int bisect(const BisectOptions& options);

// Writes DIR/<name>-<sha12>.json for every commit of good..bad (bad last), each the
// experiment its step would run, and prints how to fan them out. Exit 0; UserError for a
// DIR that is not new or empty, or bad input as bisect().
int write_bisect_experiments(const BisectOptions& options, const fs::path& dir);

// The experiment a step runs: EXPERIMENT's settings, the confirm scheme, control = the good
// commit of REPO, patched = control at commit CANDIDATE. Pure.
nlohmann::json step_experiment(const nlohmann::json& experiment, const std::string& repo,
                               const std::string& good, const std::string& candidate);

}  // namespace ks::pipeline

#pragma once
// Checks that an experiment can run here before anything is touched. Throws UserError
// naming what is missing and the command that fixes it.
#include "experiment/experiment.hpp"
#include "pipeline/run.hpp"

namespace ks::pipeline {

void preflight(const experiment::Experiment& e, const RunOptions& options);

}  // namespace ks::pipeline

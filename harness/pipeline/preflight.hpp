#pragma once
// Checks that an experiment can run here before anything is touched, whatever its backend
// (the agent, fio's job, the governor, the CPU; the backend's own needs are its
// check_machine). Throws UserError naming what is missing and the command that fixes it.
#include "experiment/experiment.hpp"
#include "pipeline/run.hpp"

namespace ks::pipeline {

void preflight(const experiment::Experiment& e, const RunOptions& options);

}  // namespace ks::pipeline

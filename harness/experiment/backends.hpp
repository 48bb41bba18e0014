#pragma once
// The one table of backends as the rest of the pipeline sees them: what an experiment may ask
// of each, known without running anything. Parsing, the pipeline, bisect, series and the
// Slurm plan read it instead of comparing backend names; boot::make_backend builds each
// (its own table, one line per row of this one). Pure.
#include <string>
#include <vector>

namespace ks::experiment {

struct BackendRules {
  std::string name;
  bool boots_kernels = false;              // each arm is a kernel built from source and booted
  std::vector<std::string> storage_kinds;  // the storage kinds its points can make
  std::string storage_hint;                // what to use instead of another kind
  bool has_section = false;  // reads its own section of the experiment, named after it
  bool leaves_process = false;  // a point ends the process (a kexec); a boot hook resumes the run
  bool instruction_clock = false;  // can time rounds in guest instructions ("clock": "instructions")
};

const std::vector<BackendRules>& backend_table();
std::vector<std::string> backend_names();
// Throws UserError naming the backends there are.
const BackendRules& backend_rules(const std::string& name);

struct Experiment;
// Throws UserError when E's backend leaves the process at every point (bare metal) and
// COMMAND (e.g. "bisect") does more than one run, or more than the run, in that process:
// no boot hook would go on with it.
void require_one_run_per_process(const Experiment& e, const std::string& command);

}  // namespace ks::experiment

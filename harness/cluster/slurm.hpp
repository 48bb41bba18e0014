#pragma once
// Fanning experiments out over a Slurm cluster (`ksandwich submit --slurm`, `ksandwich
// gather`). The plan and every sbatch command line are data (plan_jobs, sbatch_argv):
// unit-tested without Slurm. submit() and job_states() run sbatch, squeue and sacct
// through the one process runner.
//
// The unit of fan-out is a whole comparison: one job per experiment runs `ksandwich run`
// on one node (--nodes=1 --exclusive: a sandwich never spans nodes, and nothing else runs
// beside it). Kernels are built first, one job per unique kernel (`ksandwich build EXP
// --arm ARM`), into the cache every node shares ($KSANDWICH_CACHE on a shared path); each
// run job starts only after its kernels' jobs succeeded (--dependency=afterok).
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ks::cluster {

namespace fs = std::filesystem;

// One experiment to run, and the kernels its arms need (empty on the host backend).
struct ExperimentInput {
  std::string name;                 // unique among the inputs; its output is <dir>/results/<name>
  fs::path file;                    // absolute
  struct Kernel {
    std::string arm;
    std::string key;                // same key: same kernel, built once
  };
  std::vector<Kernel> kernels;
  int patch_index = 0;              // series: the patch this experiment measures
  std::string patch_subject;
};

struct Job {
  std::string name;                  // Slurm job name: ks-build-<exp>-<arm> | ks-run-<exp>
  std::string kind;                  // build | run
  std::string experiment;            // its experiment's name
  std::vector<std::string> argv;     // what the job runs (ksandwich ...)
  std::vector<size_t> after;         // indices of the jobs it waits for (afterok)
  std::string out_dir;               // run: where the bundle goes
  std::string log;                   // the job's stdout+stderr
  std::string job_id;                // set once submitted
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Job, name, kind, experiment, argv, after, out_dir, log, job_id)

struct ManifestExperiment {
  std::string name, file, out_dir;
  int patch_index = 0;
  std::string patch_subject;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ManifestExperiment, name, file, out_dir, patch_index, patch_subject)

// What `submit` leaves in the submit directory (submit.json) for `gather`.
struct Manifest {
  std::string scheduler = "slurm";
  std::string submitted_at;
  std::string dir;                   // the submit directory (absolute)
  bool series = false;               // the experiments are a patch series
  std::vector<std::string> sbatch_options;  // passed to every sbatch (partition, --sbatch-arg)
  std::vector<ManifestExperiment> experiments;
  std::vector<Job> jobs;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Manifest, scheduler, submitted_at, dir, series, sbatch_options, experiments, jobs)

inline constexpr const char* kManifestName = "submit.json";
inline constexpr const char* kJobScriptName = "job.sh";  // `exec "$@"`: the argv stays data

// The jobs for INPUTS: one build job per unique kernel key (the first experiment needing it
// builds it), then one run job per experiment after its kernels' jobs. KSANDWICH is the
// binary every job runs; DIR the submit directory (outputs in DIR/results/<name>, logs in
// DIR/logs/). Throws UserError when two inputs share a name.
std::vector<Job> plan_jobs(const std::vector<ExperimentInput>& inputs, const fs::path& ksandwich,
                           const fs::path& dir);

// The sbatch command line for JOB: --parsable, its name, log, working directory, one node,
// --exclusive for runs, OPTIONS (--partition, --sbatch-arg) as given, --dependency=afterok
// on the ids of the jobs it waits for (JOBS already submitted), then the job script and
// the job's argv as its arguments.
std::vector<std::string> sbatch_argv(const Job& job, const std::vector<Job>& jobs,
                                     const std::vector<std::string>& options, const fs::path& dir);

// "1234" or "1234;cluster" (sbatch --parsable) -> "1234"; UserError when it is not an id.
std::string parse_job_id(const std::string& sbatch_out);

// `squeue -h -t all -o %i|%T` or `sacct -n -P -X -o JobID,State` output -> id -> state
// ("COMPLETED", "FAILED", "CANCELLED by 0" -> "CANCELLED").
std::map<std::string, std::string> parse_job_states(const std::string& out);

// States that will not change any more.
bool is_final_state(const std::string& state);

// Submits every job in order (sbatch through proc), writing each id into JOBS. Throws
// UserError naming sbatch's message when a submission fails (the jobs already submitted
// are cancelled with scancel).
void submit(std::vector<Job>& jobs, const std::vector<std::string>& options, const fs::path& dir);

// The ids of IDS that are job ids as sbatch gives them (digits): only those reach squeue and
// sacct, whatever else a manifest holds (sixty-third attack: "-M,x" chose another cluster).
std::vector<std::string> queryable_job_ids(const std::vector<std::string>& ids);

// The state of each job id: squeue first (jobs Slurm still remembers), sacct for the rest;
// "UNKNOWN" for an id neither knows.
std::map<std::string, std::string> job_states(const std::vector<std::string>& ids);

}  // namespace ks::cluster

namespace ks::experiment {
struct Experiment;
}

namespace ks::cluster {

// The experiment at FILE as an input: its name, and for the qemu backend the key of each
// arm's kernel (source, config and patch files as resolved for the build, by content, and
// the arm). UserError when it does not parse.
ExperimentInput read_input(const fs::path& file, const fs::path& repo_dir);

}  // namespace ks::cluster

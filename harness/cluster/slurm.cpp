#include "cluster/slurm.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "experiment/backends.hpp"
#include "experiment/experiment.hpp"
#include "kernel/kbuild.hpp"
#include "proc/runner.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"
#include "util/ownership.hpp"

namespace ks::cluster {
namespace {

// The content hash of a patch, fragment or .config that exists here, read as `build` reads it
// (fifty-eighth attack: a 16 GB file in another user's directory was hashed as root, unbounded
// and deaf to SIGTERM): one someone else could change, or under sudo one the user could not
// read, is refused, as is one that is no regular file (a FIFO). Else its name (a config target;
// a path that exists only on the nodes). Asked as the sudo user: what lies in root's places is
// theirs to know only as far as they could look (fifty-ninth attack).
std::string content_or_name(const std::string& path, const std::string& what) {
  const auto st = status_as_invoking_user(path);
  if (!fs::exists(st)) return path;
  if (!fs::is_regular_file(st)) throw UserError(what + " " + path + " is not a regular file", "name the file itself");
  require_trusted_input(path, what);
  return "sha256:" + sha256_hex(read_input_file(path, kMaxInputBytes, what));
}

}  // namespace

ExperimentInput read_input(const fs::path& file, const fs::path& repo_dir) {
  ExperimentInput in;
  in.file = fs::absolute(file).lexically_normal();
  if (!fs::is_regular_file(status_as_invoking_user(in.file)))
    throw UserError("experiment " + file.string() + " is not a file",
                    "name experiment files (configs/experiments/*.json) or a directory written by `ksandwich series`");
  auto e = experiment::parse_file(in.file);
  in.name = e.name;
  experiment::require_one_run_per_process(e, "submit --slurm");
  if (!experiment::backend_rules(e.backend).boots_kernels) return in;
  std::vector<std::string> arms;
  for (auto& [name, arm] : e.arms) arms.push_back(name);
  std::stable_partition(arms.begin(), arms.end(), [](auto& a) { return a == "control"; });
  for (auto& arm : arms) {
    auto r = kernel::request_for_arm(e, arm, repo_dir, in.file.parent_path());
    nlohmann::json key{{"arm", arm},
                       {"source", {r.source.kind, r.source.path, r.source.commit}},
                       {"commit", r.commit},
                       {"base", content_or_name(r.config.base, "config base")},
                       {"fragments", nlohmann::json::array()},
                       {"patches", nlohmann::json::array()}};
    for (auto& f : r.config.fragments) key["fragments"].push_back(content_or_name(f, "config fragment"));
    for (auto& p : r.patches) key["patches"].push_back({p, content_or_name(p, "patch file")});
    in.kernels.push_back({arm, sha256_hex(key.dump()).substr(0, 16)});
  }
  return in;
}

std::vector<Job> plan_jobs(const std::vector<ExperimentInput>& inputs, const fs::path& ksandwich,
                           const fs::path& dir) {
  std::vector<Job> jobs;
  std::map<std::string, size_t> build_of;  // kernel key -> its build job
  std::set<std::string> names;
  auto bin = ksandwich.string();
  for (auto& in : inputs) {
    if (!names.insert(in.name).second)
      throw UserError("two experiments are named `" + in.name + "`",
                      "each experiment's output is results/<name>: give them different \"name\"s");
    std::vector<size_t> builds;
    std::optional<size_t> control;
    for (auto& k : in.kernels) {
      if (!build_of.count(k.key)) {
        Job b;
        b.name = "ks-build-" + in.name + "-" + k.arm;
        b.kind = "build";
        b.experiment = in.name;
        b.argv = {bin, "build", in.file.string(), "--arm", k.arm};
        b.log = (dir / "logs" / (b.name + ".log")).string();
        // Another arm starts from the control's finished tree: build it after the control.
        if (control) b.after.push_back(*control);
        build_of[k.key] = jobs.size();
        jobs.push_back(std::move(b));
      }
      if (k.arm == "control") control = build_of[k.key];
      builds.push_back(build_of[k.key]);
    }
    Job r;
    r.name = "ks-run-" + in.name;
    r.kind = "run";
    r.experiment = in.name;
    r.out_dir = (dir / "results" / in.name).string();
    r.argv = {bin, "run", in.file.string(), "--out", r.out_dir};
    r.log = (dir / "logs" / (r.name + ".log")).string();
    r.after = builds;
    jobs.push_back(std::move(r));
  }
  return jobs;
}

std::vector<std::string> sbatch_argv(const Job& job, const std::vector<Job>& jobs,
                                     const std::vector<std::string>& options, const fs::path& dir) {
  std::vector<std::string> argv = {"sbatch", "--parsable", "--job-name=" + job.name, "--output=" + job.log,
                                   "--chdir=" + dir.string(), "--nodes=1", "--ntasks=1"};
  if (job.kind == "run") argv.push_back("--exclusive");
  argv.insert(argv.end(), options.begin(), options.end());
  if (!job.after.empty()) {
    std::string dependency = "--dependency=afterok";
    for (auto i : job.after) {
      if (i >= jobs.size() || jobs[i].job_id.empty())
        throw UserError("job " + job.name + " waits for a job that was not submitted");
      dependency += ":" + jobs[i].job_id;
    }
    argv.push_back(dependency);
  }
  argv.push_back((dir / kJobScriptName).string());
  argv.insert(argv.end(), job.argv.begin(), job.argv.end());
  return argv;
}

std::string parse_job_id(const std::string& sbatch_out) {
  auto id = trim(sbatch_out);
  id = id.substr(0, id.find(';'));
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos)
    throw UserError("sbatch printed `" + trim(sbatch_out) + "` instead of a job id",
                    "check the sbatch options given with --partition / --sbatch-arg");
  return id;
}

std::map<std::string, std::string> parse_job_states(const std::string& out) {
  std::map<std::string, std::string> states;
  for (auto& line : split(out, '\n')) {
    auto fields = split(trim(line), '|');
    if (fields.size() < 2 || fields[0].empty()) continue;
    auto id = fields[0];
    auto state = trim(fields[1]);
    state = state.substr(0, state.find(' '));  // "CANCELLED by 0"
    if (id.find_first_not_of("0123456789") != std::string::npos) continue;  // steps: 12.batch
    states[id] = state;
  }
  return states;
}

bool is_final_state(const std::string& state) {
  static const std::set<std::string> final_states = {
      "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
      "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT"};
  return final_states.count(state) > 0;
}

void submit(std::vector<Job>& jobs, const std::vector<std::string>& options, const fs::path& dir) {
  for (auto& job : jobs) {
    auto r = proc::run(proc::command(sbatch_argv(job, jobs, options, dir), std::chrono::minutes(2)));
    if (!r.ok()) {
      std::vector<std::string> cancel = {"scancel"};
      for (auto& j : jobs)
        if (!j.job_id.empty()) cancel.push_back(j.job_id);
      if (cancel.size() > 1) proc::run(proc::command(cancel, std::chrono::minutes(1)));
      throw UserError("sbatch refused job " + job.name + ": " + trim(r.err.empty() ? r.out : r.err),
                      "check the partition and --sbatch-arg options, and that `sinfo` answers; "
                      "the jobs already submitted were cancelled");
    }
    job.job_id = parse_job_id(r.out);
  }
}

std::vector<std::string> queryable_job_ids(const std::vector<std::string>& ids) {
  std::vector<std::string> out;
  for (auto& id : ids)
    if (!id.empty() && id.size() <= 20 && std::all_of(id.begin(), id.end(), [](unsigned char c) { return std::isdigit(c); }))
      out.push_back(id);
  return out;
}

std::map<std::string, std::string> job_states(const std::vector<std::string>& all_ids) {
  std::map<std::string, std::string> states;
  const auto ids = queryable_job_ids(all_ids);
  if (!ids.empty())
    if (auto q = proc::run(proc::command({"squeue", "-h", "-t", "all", "--jobs=" + join(ids, ","), "-o", "%i|%T"},
                                         std::chrono::minutes(1)));
        q.ok())
      states = parse_job_states(q.out);
  std::vector<std::string> rest;
  for (auto& id : ids)
    if (!states.count(id)) rest.push_back(id);
  if (!rest.empty() && proc::have_program("sacct")) {
    auto a = proc::run(proc::command({"sacct", "-n", "-P", "-X", "-j", join(rest, ","), "-o", "JobID,State"},
                                     std::chrono::minutes(1)));
    if (a.ok())
      for (auto& [id, state] : parse_job_states(a.out)) states[id] = state;
  }
  for (auto& id : all_ids)
    if (!states.count(id)) states[id] = "UNKNOWN";
  return states;
}

}  // namespace ks::cluster

// The Slurm plan as data: which jobs, in which order, waiting for which, and the exact
// sbatch command lines, without a Slurm in sight.
#include <catch2/catch.hpp>
#include <algorithm>

#include "cluster/slurm.hpp"
#include "support/temp_dir.hpp"
#include "util/files.hpp"
#include "util/error.hpp"

using namespace ks::cluster;

namespace {

ExperimentInput qemu_input(const std::string& name, const std::string& control_key, const std::string& patched_key) {
  return {name, "/exp/" + name + ".json", {{"control", control_key}, {"patched", patched_key}}, 0, ""};
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

TEST_CASE("each unique kernel is built by one job, and each run waits for its kernels") {
  // Two experiments sharing the control kernel, a host experiment building nothing.
  std::vector<ExperimentInput> inputs = {qemu_input("a", "k0", "k1"), qemu_input("b", "k0", "k2"),
                                         {"h", "/exp/h.json", {}, 0, ""}};
  auto jobs = plan_jobs(inputs, "/opt/ks/bin/ksandwich", "/shared/sub");
  REQUIRE(jobs.size() == 3 + 3);
  CHECK(jobs[0].name == "ks-build-a-control");
  CHECK(jobs[0].argv == std::vector<std::string>{"/opt/ks/bin/ksandwich", "build", "/exp/a.json", "--arm", "control"});
  CHECK(jobs[1].name == "ks-build-a-patched");
  CHECK(jobs[1].after == std::vector<size_t>{0});  // starts from the control's tree
  CHECK(jobs[2].name == "ks-run-a");
  CHECK(jobs[2].after == std::vector<size_t>{0, 1});
  CHECK(jobs[2].argv == std::vector<std::string>{"/opt/ks/bin/ksandwich", "run", "/exp/a.json", "--out",
                                                 "/shared/sub/results/a"});
  CHECK(jobs[3].name == "ks-build-b-patched");  // b's control is a's: not built again
  CHECK(jobs[4].name == "ks-run-b");
  CHECK(jobs[4].after == std::vector<size_t>{0, 3});
  CHECK(jobs[5].name == "ks-run-h");
  CHECK(jobs[5].after.empty());
  CHECK(jobs[5].log == "/shared/sub/logs/ks-run-h.log");
  CHECK_THROWS_AS(plan_jobs({inputs[0], inputs[0]}, "/ks", "/d"), ks::UserError);
}

TEST_CASE("sbatch command lines: one node, exclusive runs, options passed through, afterok ids") {
  std::vector<ExperimentInput> inputs = {qemu_input("a", "k0", "k1")};
  auto jobs = plan_jobs(inputs, "/ks", "/d");
  std::vector<std::string> options = {"--partition=lab", "--time=60"};
  auto build = sbatch_argv(jobs[0], jobs, options, "/d");
  CHECK(build == std::vector<std::string>{"sbatch", "--parsable", "--job-name=ks-build-a-control",
                                          "--output=/d/logs/ks-build-a-control.log", "--chdir=/d", "--nodes=1",
                                          "--ntasks=1", "--partition=lab", "--time=60", "/d/job.sh", "/ks", "build",
                                          "/exp/a.json", "--arm", "control"});
  // A dependency on a job that has no id yet is refused, not submitted without it.
  CHECK_THROWS_AS(sbatch_argv(jobs[2], jobs, options, "/d"), ks::UserError);
  jobs[0].job_id = "101";
  jobs[1].job_id = "102";
  auto run = sbatch_argv(jobs[2], jobs, options, "/d");
  CHECK(contains(run, "--exclusive"));
  CHECK(contains(run, "--dependency=afterok:101:102"));
  CHECK_FALSE(contains(build, "--exclusive"));
  // The job's own argv follows the script untouched (no shell quoting involved).
  auto script = std::find(run.begin(), run.end(), "/d/job.sh");
  REQUIRE(script != run.end());
  CHECK(std::vector<std::string>(script + 1, run.end()) == jobs[2].argv);
}

TEST_CASE("job ids and states are read from sbatch, squeue and sacct output") {
  CHECK(parse_job_id("4242\n") == "4242");
  CHECK(parse_job_id("4242;cluster\n") == "4242");
  CHECK_THROWS_AS(parse_job_id("sbatch: error: invalid partition specified: x\n"), ks::UserError);
  CHECK_THROWS_AS(parse_job_id(""), ks::UserError);
  auto states = parse_job_states("12|COMPLETED\n12.batch|COMPLETED\n13|CANCELLED by 0\n14|PENDING\n\n");
  CHECK(states.size() == 3);
  CHECK(states["12"] == "COMPLETED");
  CHECK(states["13"] == "CANCELLED");
  CHECK(states["14"] == "PENDING");
  CHECK(is_final_state("COMPLETED"));
  CHECK(is_final_state("FAILED"));
  CHECK_FALSE(is_final_state("PENDING"));
  CHECK_FALSE(is_final_state("RUNNING"));
  // A manifest's job ids reach squeue and sacct only as digits, never as an option.
  CHECK(queryable_job_ids({"12", "-M,evil", "--help", "", "13a", "4242", std::string(21, '1')}) ==
        std::vector<std::string>{"12", "4242"});
}

TEST_CASE("the submit manifest round-trips through JSON") {
  Manifest m;
  m.dir = "/d";
  m.series = true;
  m.sbatch_options = {"--partition=lab"};
  m.experiments = {{"a", "/exp/a.json", "/d/results/a", 1, "[PATCH 1/2] btrfs: x"}};
  m.jobs = plan_jobs({qemu_input("a", "k0", "k1")}, "/ks", "/d");
  m.jobs[0].job_id = "7";
  nlohmann::json j = m;
  auto back = j.get<Manifest>();
  CHECK(nlohmann::json(back) == j);
  CHECK(back.jobs[2].after == std::vector<size_t>{0, 1});
  CHECK(back.experiments[0].patch_subject == "[PATCH 1/2] btrfs: x");
}

TEST_CASE("an experiment's kernels are keyed by what the build reads, the host backend builds none") {
  auto configs = std::filesystem::path(KS_SOURCE_DIR) / "configs/experiments";
  auto host = read_input(configs / "host-clone.json", KS_SOURCE_DIR);
  CHECK(host.name == "host-clone");
  CHECK(host.kernels.empty());
  auto qemu = read_input(configs / "default.json", KS_SOURCE_DIR);
  REQUIRE(qemu.kernels.size() == 2);
  CHECK(qemu.kernels[0].arm == "control");
  CHECK(qemu.kernels[1].arm == "patched");
  CHECK(qemu.kernels[0].key != qemu.kernels[1].key);
  CHECK(read_input(configs / "default.json", KS_SOURCE_DIR).kernels[1].key == qemu.kernels[1].key);
  CHECK_THROWS_AS(read_input(configs / "no-such.json", KS_SOURCE_DIR), ks::UserError);

  // An arm at a later commit: another commit is another kernel, the baseline the same one.
  ks::test::TempDir tmp("ks-slurm-keys");
  auto nightly = nlohmann::json::parse(ks::read_file(configs / "nightly-git.json"));
  nightly["arms"]["patched"]["commit"] = "next";
  ks::write_file(tmp.path / "next.json", nightly.dump());
  auto master = read_input(configs / "nightly-git.json", KS_SOURCE_DIR);
  auto next = read_input(tmp.path / "next.json", KS_SOURCE_DIR);
  REQUIRE(master.kernels.size() == 2);
  REQUIRE(next.kernels.size() == 2);
  CHECK(master.kernels[0].key == next.kernels[0].key);
  CHECK(master.kernels[1].key != next.kernels[1].key);
}

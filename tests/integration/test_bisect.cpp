// `ksandwich bisect` for real: the eight-commit history of the default kernel source whose
// fifth commit plants udelay(1000) in btrfs_remap_file_range (tests/support/
// kernel_history.hpp, shared with the nightly test and its kernels), a small qemu confirm
// experiment on clone, and the bisection must name the fifth commit. Every kernel after the
// good one is the candidate as the patched arm's commit, an incremental build from the good
// kernel's tree. Then the same command continues a bisection cut short, rerunning nothing
// that finished.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "support/kernel_history.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

json experiment(const fs::path& repo) {
  auto e = ks::test::clone_confirm("it-bisect", repo.string(), "HEAD");
  e["direct_hits"] = {{{"function", "btrfs_remap_file_range"}, {"required", true}}};
  e["profile"] = true;  // the planted delay must show as btrfs_remap_file_range's own time
  return e;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

TEST_CASE("bisect: eight commits, a slowdown planted in the fifth, bisect names the fifth", "[shares-machine]") {
  ks::test::require_qemu_kernels();
  ks::test::require_root("brd, QEMU's storage and the run lock");
  auto ids = ks::test::history_fixture();
  ks::test::TempDir tmp("ks-bisect");
  auto exp = tmp.path / "experiment.json";
  ks::write_file(exp, experiment(ks::test::history_fixture_dir()).dump(2));
  auto out = tmp.path / "out";
  const auto& bad = ids.back();
  const auto& first_bad = ids[ks::test::kSlowFrom - 1];
  std::vector<std::string> args = {"bisect", exp.string(), "--good", ids[0], "--bad", bad,
                                   "--out", out.string(), "--reported-by", "Tester <tester@example.org>"};

  auto started = Clock::now();
  auto r = ks::test::ksandwich_in_cache(args);
  double total = seconds_since(started);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);  // the first bad commit named: a material regression
  const std::string fifth = first_bad.substr(0, 12);
  CHECK(r.out.find("first bad commit: " + fifth) != std::string::npos);

  auto state = json::parse(ks::read_file(out / "bisect.json"));
  CHECK(state["status"] == "found");
  CHECK(state["first_bad"] == first_bad);
  auto steps = state["steps"];
  REQUIRE(steps.size() >= 2);
  CHECK(steps[0]["role"] == "initial");
  std::cout << "bisect: " << steps.size() - 1 << " steps after the initial comparison, " << total << " s in all\n";
  for (auto& s : steps) {
    // Every step measured has its bundle; every kernel after the good one was incremental.
    CHECK(fs::exists(fs::path(s["dir"].get<std::string>()) / "bundle.json"));
    auto bundle = json::parse(ks::read_file(fs::path(s["dir"].get<std::string>()) / "bundle.json"));
    CHECK(bundle["builds"]["patched"]["build"]["mode"] == "incremental");
    CHECK(bundle["builds"]["matched"] == true);
    // A step whose candidate holds the udelay(1000): the profile puts about 1,000,000
    // instructions per op (1 ms of the instruction clock) into btrfs_remap_file_range's own
    // time, its calls unchanged, the largest change of the step.
    if (s["verdict"] == "REGRESSION") {
      auto& functions = bundle["analysis"]["workloads"][0]["profile"]["functions"];
      INFO(functions.dump(1));
      REQUIRE(!functions.empty());
      auto& top = functions[0];
      CHECK(top["function"] == "btrfs_remap_file_range");
      CHECK(top["patched_calls"].get<double>() == Approx(top["control_calls"].get<double>()));
      double added = top["patched_own"].get<double>() - top["control_own"].get<double>();
      CHECK(added > 0.8e6);
      CHECK(added < 1.3e6);
    }
    std::cout << "  " << s["commit"].get<std::string>().substr(0, 12) << " " << s["verdict"].get<std::string>()
              << " ratio " << s["effects"][0]["ratio"].get<double>() << " build " << s["build_seconds"].get<double>()
              << " s, step " << s["seconds"].get<double>() << " s (kernel build "
              << bundle["builds"]["patched"]["build"]["seconds"].get<double>() << " s, "
              << bundle["builds"]["patched"]["build"]["compiled"].get<int>() << " files compiled)\n";
  }
  auto reply = ks::read_file(out / "reply.txt");
  CHECK(reply.find("Fixes: " + fifth + " (\"" + ks::test::kSlowSubject + "\")") != std::string::npos);
  CHECK(reply.find("Reported-by: Tester <tester@example.org>") != std::string::npos);

  // Cut short after its last step had run but before its verdict was written: the same
  // command continues, resumes that step's run (nothing left to measure) and ends the same.
  state["status"] = "running";
  state["first_bad"] = "";
  state["steps"].back()["verdict"] = "";
  ks::write_file(out / "bisect.json", state.dump(2));
  started = Clock::now();
  auto again = ks::test::ksandwich_in_cache(args);
  INFO(again.out << again.err);
  CHECK(again.exit_code == 1);
  CHECK(again.out.find("first bad commit: " + fifth) != std::string::npos);
  auto resumed = json::parse(ks::read_file(out / "bisect.json"));
  CHECK(resumed["steps"].size() == steps.size());
  std::cout << "bisect: continued in " << seconds_since(started) << " s\n";

  // A state file edited to send a step's run elsewhere (it is removed when the run restarts)
  // is refused before anything is touched.
  auto edited = resumed;
  edited["steps"].back()["dir"] = (tmp.path / "elsewhere").string();
  ks::write_file(out / "bisect.json", edited.dump(2));
  auto refused = ks::test::ksandwich_in_cache(args);
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("names the directory") != std::string::npos);
  ks::write_file(out / "bisect.json", resumed.dump(2));

  // Fan-out: each commit's step experiment written, not measured. The one of a commit
  // measured above is, name aside, the experiment its step's bundle holds, so a run of it
  // anywhere (a Slurm node) is taken by `--measured`.
  auto written = tmp.path / "experiments";
  auto wrote = ks::test::ksandwich_in_cache({"bisect", exp.string(), "--good", ids[0], "--bad", bad,
                                             "--write-experiments", written.string()});
  INFO(wrote.out << wrote.err);
  CHECK(wrote.exit_code == 0);
  auto without_name = [](json j) { j.erase("name"); return j; };
  size_t files = 0;
  for (auto& f : fs::directory_iterator(written)) {
    ++files;
    auto e = json::parse(ks::read_file(f.path()));
    auto commit = e["arms"]["patched"]["commit"].get<std::string>();
    CHECK(f.path().filename() == "it-bisect-" + commit.substr(0, 12) + ".json");
    CHECK(e["arms"]["control"].value("commit", "") == "");
    CHECK(e["source"]["commit"] == ids[0]);
    for (auto& st : resumed["steps"])
      if (st["commit"] == commit) {
        auto b = json::parse(ks::read_file(fs::path(st["dir"].get<std::string>()) / "bundle.json"));
        CHECK(without_name(b["experiment"]) == without_name(e));
      }
  }
  CHECK(files == ids.size() - 1);

  // A second bisection that takes every step from the first: nothing measured again.
  auto out2 = tmp.path / "out2";
  started = Clock::now();
  auto taken = ks::test::ksandwich_in_cache({"bisect", exp.string(), "--good", ids[0], "--bad", bad, "--out",
                                             out2.string(), "--measured", out.string()});
  INFO(taken.out << taken.err);
  CHECK(taken.exit_code == 1);
  CHECK(taken.out.find("first bad commit: " + fifth) != std::string::npos);
  auto second = json::parse(ks::read_file(out2 / "bisect.json"));
  // Each commit the first measured is taken (its newest run: after a skip and a second run,
  // the second, so the path may differ and reach a commit the first never measured); a
  // commit's second run after a skip is measured here.
  std::set<std::string> measured_first, seen;
  for (auto& st : resumed["steps"]) measured_first.insert(st["commit"].get<std::string>());
  for (auto& st : second["steps"])
    if (seen.insert(st["commit"].get<std::string>()).second && measured_first.count(st["commit"].get<std::string>()))
      CHECK(st["measured_in"] != "");
  std::cout << "bisect: " << second["steps"].size() << " steps from the first bisection's runs in " << seconds_since(started) << " s\n";

  // A run that did not finish (its last write, with the timings, never came) is not taken,
  // and a link in a run's directory is not followed into the step's copy.
  auto partial = tmp.path / "partial";
  fs::copy(out, partial, fs::copy_options::recursive);
  auto initial_dir = partial / fs::relative(fs::path(resumed["steps"][0]["dir"].get<std::string>()), out);
  auto unfinished = json::parse(ks::read_file(initial_dir / "bundle.json"));
  REQUIRE(unfinished.contains("timings"));  // bundle.extra's keys sit at the top level
  unfinished.erase("timings");
  ks::write_file(initial_dir / "bundle.json", unfinished.dump());
  fs::remove(initial_dir / "bundle.json.gz");
  auto last_dir = partial / fs::relative(fs::path(resumed["steps"].back()["dir"].get<std::string>()), out);
  fs::create_directory_symlink("/", last_dir / "root-link");
  auto out3 = tmp.path / "out3";
  auto third = ks::test::ksandwich_in_cache({"bisect", exp.string(), "--good", ids[0], "--bad", bad, "--out",
                                             out3.string(), "--measured", partial.string()});
  INFO(third.out << third.err);
  CHECK(third.exit_code == 1);
  CHECK(third.out.find("first bad commit: " + fifth) != std::string::npos);
  auto third_state = json::parse(ks::read_file(out3 / "bisect.json"));
  CHECK(third_state["steps"][0]["measured_in"] == "");  // measured here
  std::set<std::string> seen_third;
  for (auto& st : third_state["steps"]) {
    CHECK_FALSE(fs::exists(fs::symlink_status(fs::path(st["dir"].get<std::string>()) / "root-link")));
    if (seen_third.insert(st["commit"].get<std::string>()).second && st["role"] == "candidate" &&
        st["commit"] == resumed["steps"].back()["commit"])
      CHECK(st["measured_in"] == last_dir.string());  // its newest run
  }

  // Another bisection into the same directory is refused.
  auto other = ks::test::ksandwich_in_cache({"bisect", exp.string(), "--good", ids[1], "--bad", bad, "--out", out.string()});
  CHECK(other.exit_code == 2);
  CHECK(other.err.find("holds another bisection") != std::string::npos);
}

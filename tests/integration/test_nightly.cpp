// `ksandwich nightly` for real, the way a lab machine runs it: a branch `tip` of a kernel
// git tree (tests/support/kernel_history.hpp: the baseline, then commits 3 to 6, one a
// night; the fifth commit, the third night's, plants udelay(1000) in btrfs_remap_file_range)
// moves one commit a night, the experiment stays the same file (baseline = the first
// commit, patched arm = "tip"), each night adds its bundle to a history, and `trend` must
// name the third night as the change and `git log <second night>..<third night>` as its
// commit range. A second history, on which the tip stops at the second night's commit (no
// slowdown), must show no change point. Four nights are the fewest a change point needs
// (two on either side).
//
// Each night's kernel is an incremental build from the baseline's tree (kept in the
// integration cache, shared with the bisect test); a night is a 3-block clone confirm under
// QEMU. Printed: each night's wall clock and ratio.
#include <catch2/catch.hpp>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "support/kernel_history.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

json nightly_experiment(const std::string& baseline) {
  // Relative: the tree beside the experiment file, as a lab machine would keep it.
  auto e = ks::test::clone_confirm("it-nightly", "linux", baseline);
  e["arms"]["patched"]["commit"] = "tip";
  return e;
}

struct Night {
  fs::path bundle;
  int exit_code = 0;
};

// One night: the branch moved to COMMIT, then `ksandwich nightly` into HISTORY.
Night night(const fs::path& dir, const std::string& commit, const fs::path& history, int n) {
  auto moved = ks::proc::run(ks::proc::command({"git", "-C", (dir / "linux").string(), "branch", "-f", "tip", commit},
                                               std::chrono::minutes(1)));
  REQUIRE(moved.ok());
  auto out = dir / (history.stem().string() + "-night-" + std::to_string(n));
  auto started = Clock::now();
  auto r = ks::test::ksandwich_in_cache({"nightly", (dir / "nightly.json").string(), "--history", history.string(),
                                         "--out", out.string()});
  double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  INFO(r.out << r.err);
  REQUIRE(fs::exists(out / "bundle.json"));
  CHECK(r.out.find("added to " + history.string()) != std::string::npos);
  auto bundle = json::parse(ks::read_file(out / "bundle.json"));
  CHECK(bundle["builds"]["matched"] == true);
  CHECK(bundle["builds"]["patched"]["commit"]["sha"] == commit);
  auto& w = bundle["analysis"]["workloads"][0];
  std::cout << "nightly: night " << n << " tip " << commit.substr(0, 12) << ": " << seconds << " s, exit "
            << r.exit_code << ", clone tip/baseline " << (w["ratio_ci"].is_object() ? w["ratio_ci"]["estimate"].get<double>() : 0.0) << " ("
            << w["verdict"].get<std::string>() << ", " << w["block_ratios"].size() << " blocks)\n";
  CHECK(w["ratio_ci"].is_object());  // else the night is not on the trend
  return {out / "bundle.json", r.exit_code};
}

json trend(const fs::path& history, const std::string& format) {
  auto r = ks::test::ksandwich_in_cache({"trend", "--history", history.string(), "--format", format});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  return format == "json" ? json::parse(r.out) : json(r.out);
}

}  // namespace

TEST_CASE("nightly: four nights of a branch, a slowdown from the third, trend names that night and its commits", "[shares-machine]") {
  ks::test::require_qemu_kernels();
  ks::test::require_root("brd, QEMU's storage and the run lock");
  auto ids = ks::test::history_fixture();
  ks::test::TempDir tmp("ks-nightly");
  // The lab machine's tree: a clone sharing the fixture's objects, with a branch to track.
  auto cloned = ks::proc::run(ks::proc::command(
      {"git", "clone", "-q", "--shared", "--no-checkout", ks::test::history_fixture_dir().string(),
       (tmp.path / "linux").string()},
      std::chrono::minutes(5)));
  REQUIRE(cloned.ok());
  ks::write_file(tmp.path / "nightly.json", nightly_experiment(ids[0]).dump(2));
  auto slowed = tmp.path / "slowed.sqlite", flat = tmp.path / "flat.sqlite";

  // Night n (0-based) tracks commit n + 3; the fifth commit, the first slow one, is night 2's.
  constexpr int kNights = 4;
  auto tip_of = [&](int n) { return ids[n + 2]; };
  const int first_slow = ks::test::kSlowFrom - 3;
  std::vector<Night> nights;
  for (int n = 0; n < kNights; ++n) nights.push_back(night(tmp.path, tip_of(n), slowed, n + 1));
  for (int n = 0; n < kNights; ++n) {
    // Slow nights are a material regression (exit 1); the others no change or undecided.
    if (n >= first_slow) CHECK(nights[n].exit_code == 1);
    else CHECK((nights[n].exit_code == 0 || nights[n].exit_code == 4));
  }

  auto t = trend(slowed, "json");
  REQUIRE(t.size() == 1);
  CHECK(t[0]["workload"] == "clone");
  CHECK(t[0]["nights"].size() == static_cast<size_t>(kNights));
  REQUIRE(t[0]["changes"].size() == 1);
  auto& change = t[0]["changes"][0];
  CHECK(change["night"] == first_slow + 1);  // numbered from 1, as the text prints it
  CHECK(change["last_before"]["tip"] == "commit " + tip_of(first_slow - 1));
  CHECK(change["first_after"]["tip"] == "commit " + tip_of(first_slow));
  std::cout << "nightly: change at night " << change["night"].get<int>() << ", p " << change["p_value"].get<double>()
            << ", tip/baseline " << change["ratio_before"].get<double>() << " -> "
            << change["ratio_after"].get<double>() << "\n";
  auto text = trend(slowed, "text").get<std::string>();
  INFO(text);
  CHECK(text.find("git log " + tip_of(first_slow - 1) + ".." + tip_of(first_slow)) != std::string::npos);

  // The flat history: the same first two nights, then the branch stays at the second
  // night's commit for two more nights (nothing new landed).
  for (int n = 0; n < first_slow; ++n) {
    auto r = ks::test::ksandwich_in_cache({"history", "add", "--history", flat.string(), nights[n].bundle.string()});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
  }
  for (int n = first_slow; n < kNights; ++n) night(tmp.path, tip_of(first_slow - 1), flat, n + 1);
  auto f = trend(flat, "json");
  REQUIRE(f.size() == 1);
  CHECK(f[0]["nights"].size() == static_cast<size_t>(kNights));
  CHECK(f[0]["changes"].empty());
}

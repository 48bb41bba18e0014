// The newcomer's path: the README's first command, exactly as written, from the repository
// root, with the default output directory and the default kernel cache, through the real
// binary. It must end with a verdict, never with bad input (2) or an INVALID run (3), and
// leave its bundle in results/ naming the accelerator and the clock that ran. Under TCG the
// clock counts instructions and the answer is deterministic: exit 1, clone a material
// REGRESSION (the SB_NOSEC drop adds the security-xattr lookups to every clone) with an
// interval at most +-1% wide, decided at the first look (3 blocks). Under KVM (wall time) it
// must be a verdict (0, 1 or 4).
//
// The command is read from README.md, so the test follows the README when it changes.
// It builds both kernels into the default cache when they are not there yet.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "proc/runner.hpp"
#include "support/paths.hpp"
#include "support/skip.hpp"
#include "util/files.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The first command of the README's first ```sh block.
std::string readme_main_job_command() {
  auto readme = ks::read_file(ks::test::source_dir() / "README.md");
  std::smatch m;
  REQUIRE(std::regex_search(readme, m, std::regex("```sh\n([^\n]+)\n")));
  return m[1];
}

std::set<fs::path> result_dirs() {
  std::set<fs::path> dirs;
  auto results = ks::test::source_dir() / "results";
  if (fs::is_directory(results))
    for (auto& entry : fs::directory_iterator(results)) dirs.insert(entry.path());
  return dirs;
}

}  // namespace

TEST_CASE("README: the main job's command, as written, from the repository root, ends with a verdict") {
  KS_SKIP_UNLESS(fs::equivalent(ks::test::binary_dir(), ks::test::source_dir() / "build"),
                 "the README's command runs build/bin/ksandwich; this test binary was built elsewhere (" +
                     ks::test::binary_dir().string() + ")");
  KS_SKIP_UNLESS(fs::exists("/usr/src/linux-source-6.1.tar.xz"), "needs linux-source-6.1 (tools/setup.sh)");
  KS_SKIP_UNLESS(ks::proc::have_program("qemu-system-x86_64"), "needs qemu-system-x86_64 (tools/setup.sh)");

  auto command = readme_main_job_command();
  CHECK_THAT(command, Catch::Contains("ksandwich run configs/experiments/default.json"));
  auto before = result_dirs();
  ks::proc::Command cmd;
  cmd.argv = {"bash", "-c", command};
  cmd.cwd = ks::test::source_dir();
  cmd.timeout = std::chrono::minutes(75);  // two kernel builds when the cache is cold
  auto r = ks::proc::run(cmd);
  std::printf("README main job: exit %d in %.0f s\n", r.exit_code, r.seconds);

  std::vector<fs::path> made;
  for (auto& dir : result_dirs())
    if (!before.count(dir)) made.push_back(dir);
  INFO(r.out.substr(r.out.size() > 6000 ? r.out.size() - 6000 : 0) << "\n" << r.err);
  REQUIRE(made.size() == 1);
  const auto out = made.front();
  CHECK_THAT(out.filename().string(), Catch::StartsWith("default-"));
  REQUIRE(fs::is_regular_file(out / "bundle.json"));
  auto bundle = json::parse(ks::read_file(out / "bundle.json"));

  CHECK((r.exit_code == 0 || r.exit_code == 1 || r.exit_code == 4));
  CHECK(bundle["verdict"] != "INVALID");
  for (auto& p : bundle["points"]) {
    INFO("point " << p["id"] << ": " << p.value("failure", ""));
    CHECK(p["status"] != "failed");
  }
  const auto& accel = bundle["machine"]["accelerator"];
  CHECK((accel["used"] == "kvm" || accel["used"] == "tcg"));
  CHECK_FALSE(accel["reason"].get<std::string>().empty());
  auto report = ks::read_file(out / "report.txt");
  CHECK_THAT(report, Catch::Contains("accelerator " + accel["used"].get<std::string>()));
  const auto clock = bundle["machine"]["clock"]["name"].get<std::string>();
  CHECK(clock == (accel["used"] == "tcg" ? "icount" : "wall"));
  CHECK_THAT(report, Catch::Contains("Clock:"));
  if (clock == "icount") {
    CHECK(r.exit_code == 1);
    CHECK(bundle["stopped"]["blocks_run"] == 3);
    CHECK_THAT(report, Catch::Contains("instr/op"));
    for (auto& w : bundle["analysis"]["workloads"]) {
      std::printf("  %s: %s %+.3f%% (interval %.4f .. %.4f)\n", w["workload"].get<std::string>().c_str(),
                  w["verdict"].get<std::string>().c_str(), w.value("delta_pct", 0.0),
                  w["ratio_ci"].value("low", 0.0), w["ratio_ci"].value("high", 0.0));
      if (w["workload"] != "clone") continue;
      CHECK(w["verdict"] == "REGRESSION");
      CHECK(w["material"] == true);
      CHECK(w["ratio_ci"]["high"].get<double>() - w["ratio_ci"]["low"].get<double>() <= 0.02);
    }
  }
  std::printf("accelerator %s (%s), verdict %s\n", accel["used"].get<std::string>().c_str(),
              accel["reason"].get<std::string>().c_str(), bundle["verdict"].get<std::string>().c_str());

  std::error_code ec;
  fs::remove_all(out, ec);
  fs::remove(ks::test::source_dir() / "results", ec);  // only when empty
}

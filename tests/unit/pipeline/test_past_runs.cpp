// How long a run would take here, from this machine's own records: the newest finished run
// of the same experiment in a results directory tells a point's time; an unfinished run, one
// of another experiment, a link or a damaged file tells nothing.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>

#include "experiment/experiment.hpp"
#include "pipeline/past_runs.hpp"
#include "support/temp_dir.hpp"
#include "util/files.hpp"
#include "util/progress.hpp"

using namespace ks;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kBundle = fs::path(KS_SOURCE_DIR) / "tests/data/bundles/qemu-confirm.json";

// A run directory NAME in RESULTS holding BUNDLE, its bundle.json AGE seconds old.
void plant(const fs::path& results, const std::string& name, const json& bundle, int age) {
  fs::create_directories(results / name);
  write_file(results / name / "bundle.json", bundle.dump());
  fs::last_write_time(results / name / "bundle.json", fs::file_time_type::clock::now() - std::chrono::seconds(age));
}

double mean_ok_seconds(const json& bundle) {
  double sum = 0;
  int n = 0;
  for (auto& p : bundle["points"])
    if (p["status"] == "ok") sum += p["seconds"].get<double>(), ++n;
  return sum / n;
}

experiment::Experiment default_experiment() {
  return experiment::parse_file(fs::path(KS_SOURCE_DIR) / "configs/experiments/default.json");
}

}  // namespace

TEST_CASE("past runs: the newest finished run of the same experiment tells a point's time") {
  test::TempDir tmp("ks-past-runs");
  auto results = tmp.path / "results";
  auto bundle = json::parse(read_file(kBundle));
  REQUIRE(bundle["experiment_name"] == "default");
  plant(results, "default-old", bundle, 600);
  auto other = bundle;
  other["experiment_name"] = "sb-nosec-dio";
  plant(results, "other-newer", other, 300);
  auto unfinished = bundle;
  unfinished.erase("timings");
  plant(results, "default-unfinished", unfinished, 200);
  fs::create_directories(results / "default-damaged");
  write_file(results / "default-damaged/bundle.json", "{\"schema_version\":");
  // A link to a finished run elsewhere is not followed.
  plant(tmp.path, "elsewhere", bundle, 0);
  fs::create_directory_symlink(tmp.path / "elsewhere", results / "default-link");

  auto past = pipeline::past_points(results, "default", "qemu");
  REQUIRE(past);
  CHECK(past->dir == results / "default-old");
  CHECK(past->seconds == Approx(mean_ok_seconds(bundle)));
  CHECK(past->accelerator == "tcg");
  CHECK_FALSE(pipeline::past_points(results, "default", "host"));
  CHECK_FALSE(pipeline::past_points(results, "never-run", "qemu"));
  CHECK_FALSE(pipeline::past_points(tmp.path / "no-such-dir", "default", "qemu"));

  auto e = default_experiment();
  auto text = pipeline::describe_time(e, 12, {"", 600, {}}, results);
  INFO(text);
  CHECK(text.starts_with("about "));
  CHECK(text.find("kernels 10m00s, up to 12 points of about ") != std::string::npos);
  CHECK(text.find("(as in " + (results / "default-old").string() + ", under tcg)") != std::string::npos);
  CHECK(text.find("not known") == std::string::npos);
  double total = 600 + 12 * mean_ok_seconds(bundle);
  CHECK(text.find(progress::format_duration(total)) != std::string::npos);
}

TEST_CASE("past runs: what no record tells is named, never guessed") {
  test::TempDir tmp("ks-past-runs");
  auto e = default_experiment();
  auto text = pipeline::describe_time(e, 12, {"", 0, {"control", "patched"}}, tmp.path);
  INFO(text);
  CHECK(text == "not known: building control and patched (no earlier build of its kind in the cache), "
                "the up to 12 points (no finished run of default in " + tmp.path.string() + ")");
  auto partly = pipeline::describe_time(e, 12, {"", 90, {"patched"}}, tmp.path);
  CHECK(partly.starts_with("at least 1m30s: kernels 1m30s; not known: building patched"));
}

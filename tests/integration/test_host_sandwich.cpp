// The whole host sandwich, for real: ksandwich run on btrfs over a RAM-backed device,
// as root. Also: resume, Ctrl-C cleanup, a failing point, and `ksandwich validate`.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "proc/runner.hpp"
#include "support/paths.hpp"
#include "support/sandwich.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "util/files.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using ks::test::check_exit_without_failures;
using ks::test::require_host_sandwich;

namespace {

struct TempDir : ks::test::TempDir {
  TempDir() : ks::test::TempDir("ks-sandwich") {}
};

json experiment(int rounds, int ops) {
  return {{"name", "it-host"},
          {"backend", "host"},
          {"rounds", rounds},
          {"warmup_rounds", 1},
          {"cpu", std::thread::hardware_concurrency() > 1 ? 1 : 0},
          {"storage", {{"kind", "auto"}, {"size_mib", 512}}},
          {"arms", {{"control", json::object()}, {"patched", json::object()}}},
          {"workloads", {{{"name", "clone"}, {"ops", ops}}, {{"name", "dedupe"}, {"ops", ops}}}}};
}

fs::path write_experiment(const fs::path& dir, const json& e) {
  auto path = dir / "experiment.json";
  ks::write_file(path, e.dump(2));
  return path;
}

ks::proc::Result ksandwich(std::vector<std::string> args, int minutes = 10) {
  args.insert(args.begin(), ks::test::ksandwich_binary().string());
  return ks::proc::run(ks::proc::command(std::move(args), std::chrono::minutes(minutes)));
}

json read_json(const fs::path& p) { return json::parse(ks::read_file(p)); }

// What the harness may have left behind: its mounts, loop files, zram devices.
std::string leftovers() {
  std::string found;
  auto mounts = ks::read_file("/proc/self/mounts");
  for (auto& line : ks::split(mounts, '\n'))
    if (line.find("/run/ksandwich") != std::string::npos) found += "mount: " + line + "\n";
  auto loops = ks::proc::run(ks::proc::command({"losetup", "-a"}, std::chrono::seconds(10)));
  for (auto& line : ks::split(loops.out, '\n'))
    if (line.find("ksandwich") != std::string::npos) found += "loop: " + line + "\n";
  for (auto& entry : fs::directory_iterator("/dev/shm"))
    if (entry.path().filename().string().find("ksandwich") != std::string::npos)
      found += "file: " + entry.path().string() + "\n";
  return found;
}

}  // namespace

TEST_CASE("a host A/A sandwich runs end to end and leaves a valid bundle and a report") {
  require_host_sandwich();
  TempDir tmp;
  auto out = tmp.path / "out";
  auto r = ksandwich({"run", write_experiment(tmp.path, experiment(3, 2000)).string(), "--out", out.string()});
  INFO(r.out << r.err);
  check_exit_without_failures(r.exit_code, read_json(out / "bundle.json"));

  auto bundle = read_json(out / "bundle.json");
  REQUIRE(bundle["points"].size() == 3);
  for (auto& p : bundle["points"]) {
    CHECK(p["status"] == "ok");
    CHECK_FALSE(p["kernel_release"].get<std::string>().empty());
    CHECK(p["storage"]["kind"].is_string());
  }
  // 3 points x 2 workloads x (1 warm-up + 3 measured) rounds.
  CHECK(bundle["rows"].size() == 3 * 2 * 4);
  for (auto& row : bundle["rows"]) {
    CHECK(row["expected_match_ratio"] == 100);
    CHECK(row["unexpected_results"] == 0);
    CHECK(row["ns_per_op"].get<double>() > 100);  // a real ioctl costs microseconds
  }
  auto& w = bundle["analysis"]["workloads"];
  REQUIRE(w.size() == 2);
  CHECK(w[0]["workload"] == "clone");
  CHECK(w[0]["control_midpoint"].get<double>() ==
        Approx((w[0]["control_a"].get<double>() + w[0]["control_b"].get<double>()) / 2));

  auto report = ks::read_file(out / "report.txt");
  CHECK_THAT(report, Catch::Contains("control A") && Catch::Contains("patched") && Catch::Contains("clone"));
  CHECK(fs::exists(out / "report.html"));
  CHECK(fs::exists(out / "report.md"));

  auto v = ksandwich({"validate", (out / "bundle.json").string()});
  INFO(v.out << v.err);
  CHECK(v.exit_code == 0);

  // A tampered bundle is caught by its own arithmetic.
  bundle["analysis"]["workloads"][0]["delta_pct"] = 42.0;
  ks::write_file(tmp.path / "tampered.json", bundle.dump());
  auto t = ksandwich({"validate", (tmp.path / "tampered.json").string()});
  CHECK(t.exit_code == 2);
  CHECK_THAT(t.err, Catch::Contains("delta_pct"));

  CHECK(leftovers().empty());
}

TEST_CASE("resume reruns only the points that did not finish") {
  require_host_sandwich();
  TempDir tmp;
  auto out = tmp.path / "out";
  auto first = ksandwich({"run", write_experiment(tmp.path, experiment(2, 500)).string(), "--out", out.string()});
  INFO(first.out << first.err);
  REQUIRE(fs::exists(out / "bundle.json"));
  check_exit_without_failures(first.exit_code, read_json(out / "bundle.json"));

  // Pretend the run died during the last point.
  auto bundle = read_json(out / "bundle.json");
  auto kept_started = bundle["points"][0]["started_at"];
  bundle["points"][2]["status"] = "pending";
  json rows = json::array();
  for (auto& row : bundle["rows"])
    if (row["point"] != 2) rows.push_back(row);
  bundle["rows"] = rows;
  ks::write_file(out / "bundle.json", bundle.dump(2));

  auto resumed = ksandwich({"run", "--resume", out.string()});
  INFO(resumed.out << resumed.err);
  check_exit_without_failures(resumed.exit_code, read_json(out / "bundle.json"));
  CHECK_THAT(resumed.err, Catch::Contains("[point 1/3 control] already done"));
  CHECK_THAT(resumed.err, Catch::Contains("[point 2/3 patched] already done"));
  CHECK_THAT(resumed.err, Catch::Contains("[point 3/3 control] running"));
  auto after = read_json(out / "bundle.json");
  CHECK(after["points"][0]["started_at"] == kept_started);
  CHECK(after["points"][2]["status"] == "ok");
  CHECK(after["rows"].size() == 3 * 2 * 3);
  CHECK(leftovers().empty());
}

TEST_CASE("Ctrl-C during a point removes everything and the run can be resumed") {
  require_host_sandwich();
  TempDir tmp;
  auto out = tmp.path / "out";
  auto exp = write_experiment(tmp.path, experiment(40, 20000));  // long enough to interrupt
  pid_t pid = fork();
  if (pid == 0) {
    std::string bin = ks::test::ksandwich_binary().string();
    execl(bin.c_str(), bin.c_str(), "run", exp.c_str(), "--out", out.c_str(), (char*)nullptr);
    _exit(127);
  }
  // Wait until the first point has its filesystem mounted, then interrupt.
  bool mounted = false;
  for (int i = 0; i < 300 && !mounted; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    mounted = ks::read_file("/proc/self/mounts").find("/run/ksandwich") != std::string::npos;
  }
  CHECK(mounted);
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK(leftovers().empty());
  auto bundle = read_json(out / "bundle.json");
  CHECK(bundle["points"][0]["status"] == "pending");
}

TEST_CASE("a failing workload marks the point failed, exits 3 and still writes the bundle") {
  require_host_sandwich();
  TempDir tmp;
  auto out = tmp.path / "out";
  auto e = experiment(2, 500);
  // 64 MiB clone ranges x 100 ops cannot fit on a 512 MiB filesystem: the agent fails.
  e["workloads"] = {{{"name", "clone"}, {"ops", 100}, {"range_bytes", 64 * 1024 * 1024}}};
  e["continue_on_failure"] = false;
  auto r = ksandwich({"run", write_experiment(tmp.path, e).string(), "--out", out.string()});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 3);
  auto bundle = read_json(out / "bundle.json");
  CHECK(bundle["points"][0]["status"] == "failed");
  CHECK_THAT(bundle["points"][0]["failure"].get<std::string>(), Catch::Contains("clone"));
  CHECK(bundle["points"][1]["status"] == "pending");  // stopped, as the experiment said
  CHECK(bundle["verdict"] == "INVALID");
  CHECK(leftovers().empty());
}

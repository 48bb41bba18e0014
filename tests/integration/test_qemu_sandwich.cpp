// The main job's path for real: `ksandwich run` on a qemu experiment builds (or finds in
// the build cache) the control and the patched kernel, boots every point of the sandwich
// in a fresh QEMU guest, and leaves a bundle with three points, their kernel releases and
// console logs, raw rows, the matched-build audit and direct-hit counts from inside the
// guests. Then --resume after a lost point reruns that point only.
//
// The kernels are built in the integration tests' cache (the default cache, as the kernel
// build tests use), so after test_kernel_build they are cache hits; alone, this test
// builds them (about 10 minutes on 2 cores).
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "proc/runner.hpp"
#include "source/source.hpp"
#include "support/broken_kvm.hpp"
#include "support/integration_cache.hpp"
#include "support/paths.hpp"
#include "support/sandwich.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "util/files.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void require_qemu_sandwich() {
  KS_SKIP_UNLESS(fs::exists("/usr/src/linux-source-6.1.tar.xz"),
                 "needs /usr/src/linux-source-6.1.tar.xz (apt-get install linux-source-6.1)");
  for (const char* tool : {"qemu-system-x86_64", "mkfs.btrfs", "make", "gcc", "flex", "bison", "bc", "cpio"})
    KS_SKIP_UNLESS(ks::proc::have_program(tool), std::string("needs ") + tool + " (tools/setup.sh)");
  KS_SKIP_UNLESS(fs::exists("/bin/busybox"), "/bin/busybox is missing (apt-get install busybox-static)");
  KS_SKIP_UNLESS(fs::exists(ks::test::agent_binary()), "ksandwich-agent is not built");
}


constexpr int kOps = 200;

json experiment() {
  return {{"name", "it-qemu"},
          {"backend", "qemu"},
          {"clock", "instructions"},  // TCG's, even where KVM works: the checks compare rounds
          {"rounds", 2},
          {"cpu", 1},
          {"point_timeout_s", 300},
          {"qemu", {{"memory_mib", 1024}, {"vcpus", 1}}},
          {"storage", {{"kind", "brd"}, {"size_mib", 256}}},
          {"arms", {{"control", json::object()}, {"patched", {{"patches", {"btrfs-drop-sb-nosec.patch"}}}}}},
          {"workloads", {{{"name", "clone"}, {"ops", kOps}}}},
          {"direct_hits", {{{"function", "btrfs_remap_file_range"}, {"required", true}}}},
          {"profile", true}};
}

// The median time per op of a point's measured clone rounds.
double median_per_op(const json& bundle, int point) {
  std::vector<double> v;
  for (auto& row : bundle["rows"])
    if (row["point"] == point && !row.value("warmup", false))
      v.push_back(row["elapsed_ns"].get<double>() / row["ops"].get<double>());
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : (v[(v.size() - 1) / 2] + v[v.size() / 2]) / 2;
}

ks::proc::Result ksandwich(std::vector<std::string> args) {
  args.insert(args.begin(), ks::test::ksandwich_binary().string());
  ks::proc::Command cmd;
  cmd.argv = args;
  cmd.timeout = std::chrono::minutes(40);  // two kernel builds if the cache is cold
  cmd.env = ks::test::integration_cache_env();
  return ks::proc::run(cmd);
}

json read_json(const fs::path& p) { return json::parse(ks::read_file(p)); }

bool qemu_running() {
  auto r = ks::proc::run(ks::proc::command({"pgrep", "-f", "qemu-system-x86_64.*ks-qemu-sandwich"}, std::chrono::seconds(10)));
  return r.exit_code == 0;
}

}  // namespace

TEST_CASE("qemu sandwich: both kernels built, three boots, audit, guest direct hits, resume") {
  require_qemu_sandwich();
  ks::test::TempDir tmp("ks-qemu-sandwich");
  auto out = tmp.path / "out";
  auto exp = tmp.path / "experiment.json";
  ks::write_file(exp, experiment().dump(2));

  auto r = ksandwich({"run", exp.string(), "--out", out.string()});
  INFO(r.out << r.err);
  REQUIRE(fs::exists(out / "bundle.json"));
  auto bundle = read_json(out / "bundle.json");
  // Nothing may fail; a screen of 2 rounds ends INCONCLUSIVE (exit 4) or, by noise, 0/1.
  ks::test::check_exit_without_failures(r.exit_code, bundle);

  // The kernels: matched in every audited field, releases naming the arm.
  auto& builds = bundle["builds"];
  CHECK(builds["matched"] == true);
  CHECK(builds["control"]["kernel_release"] == "6.1.192-ks-control");
  CHECK(builds["patched"]["kernel_release"] == "6.1.192-ks-patched");
  CHECK(builds["patched"]["patches"][0]["subject"] == "[PATCH] btrfs: drop SB_NOSEC from the superblock flags");
  for (auto& row : builds["audit"]) CHECK(row["status"] == "PASS");

  // Three boots, each of its arm's kernel, each with its console log and rows.
  REQUIRE(bundle["points"].size() == 3);
  for (auto& p : bundle["points"]) {
    INFO("point " << p["id"] << ": " << p.value("failure", "") << "\n" << p.value("console_tail", ""));
    CHECK(p["status"] == "ok");
    CHECK(p["kernel_release"] == "6.1.192-ks-" + p["arm"].get<std::string>());
    CHECK(fs::is_regular_file(out / p["log"].get<std::string>()));
    CHECK(p["environment"]["clocksource"] != "jiffies");
    CHECK(p["storage"]["device"] == "/dev/ram0");
    // Counted inside the guest: one call per clone of the short pass (one round of kOps).
    auto& hits = p["direct_hit"];
    REQUIRE(hits.size() == 1);
    CHECK(hits[0]["function"] == "btrfs_remap_file_range");
    CHECK(hits[0]["available"] == true);
    CHECK(hits[0]["calls"] == kOps);
    // The guest's own dmesg came back and was scanned, and it was clean.
    CHECK_FALSE(p["health"].contains("error"));
    REQUIRE(p["health"]["findings"].is_array());
    CHECK(p["health"]["findings"].empty());
    CHECK(p["health"]["scanned_lines"].get<int>() > 50);
    // The profiling pass: the timed ops of one round of kOps clones, under the profiler.
    REQUIRE(p["profile"].size() == 1);
    CHECK(p["profile"][0]["workload"] == "clone");
    CHECK(p["profile"][0]["ops"] == kOps);
    CHECK(p["profile"][0]["functions"].size() > 20);
  }
  // Where the clone's time went: the security-xattr lookup that SB_NOSEC let btrfs skip is
  // new on the path, once per clone, and the functions whose calls changed account for most
  // of the measured change.
  auto& profile = bundle["analysis"]["workloads"][0]["profile"];
  INFO(profile.dump(1));
  bool xattr_lookup = false;
  for (auto& f : profile["functions"])
    if (f["function"].get<std::string>().find("getxattr") != std::string::npos) {
      xattr_lookup = true;
      CHECK(f["control_calls"].get<double>() < 0.05);
      CHECK(f["patched_calls"].get<double>() == Approx(1).margin(0.05));
    }
  CHECK(xattr_lookup);
  // Less the profiler's cost, the profiled functions' time changed as the rounds' did.
  CHECK(profile["profiled_change"].get<double>() ==
        Approx(profile["measured_change"].get<double>()).epsilon(0.1));
  CHECK(bundle["rows"].size() == 3 * 2);
  for (auto& row : bundle["rows"]) CHECK(row["unexpected_results"] == 0);
  CHECK(bundle["timings"]["points"].size() == 3);
  auto report = ks::read_file(out / "report.txt");
  CHECK_THAT(report, Catch::Contains("Matched-build audit") && Catch::Contains("6.1.192-ks-patched"));
  CHECK_THAT(report, Catch::Contains("where the time per op went"));
  CHECK_FALSE(qemu_running());

  auto v = ksandwich({"validate", (out / "bundle.json").string()});
  INFO(v.out << v.err);
  CHECK(v.exit_code == 0);

  // Lose the last point, as a killed run would, and resume: only that point boots again,
  // this time without the profiling pass. On the instruction clock its rounds repeat the
  // control points' with the pass within 1%: the pass, after the rounds, never touched them.
  // (A round of 200 clones spreads about 0.3% from boot to boot, so the median of two against
  // the mean of two medians has a spread near 0.25%; the profiler, had it run during the
  // rounds, costs about five times the op, as its own pass in the bundle shows.)
  REQUIRE(bundle["machine"]["clock"]["name"] == "icount");
  const double with_a = median_per_op(bundle, 0), with_b = median_per_op(bundle, 2);
  bundle["experiment"]["profile"] = false;
  bundle["points"][2]["status"] = "pending";
  json rows = json::array();
  for (auto& row : bundle["rows"])
    if (row["point"] != 2) rows.push_back(row);
  bundle["rows"] = rows;
  auto kept_started = bundle["points"][0]["started_at"];
  ks::write_file(out / "bundle.json", bundle.dump(2));
  auto resumed = ksandwich({"run", "--resume", out.string()});
  INFO(resumed.out << resumed.err);
  CHECK_THAT(resumed.err, Catch::Contains("[point 1/3 control] already done"));
  CHECK_THAT(resumed.err, Catch::Contains("[point 2/3 patched] already done"));
  CHECK_THAT(resumed.err, Catch::Contains("[point 3/3 control] running"));
  auto after = read_json(out / "bundle.json");
  CHECK(after["points"][0]["started_at"] == kept_started);
  CHECK(after["points"][2]["status"] == "ok");
  CHECK(after["rows"].size() == 3 * 2);
  CHECK_FALSE(after["points"][2].contains("profile"));
  CHECK(std::abs(median_per_op(after, 2) - (with_a + with_b) / 2) <= 0.01 * (with_a + with_b) / 2);
  CHECK_FALSE(qemu_running());
}

TEST_CASE("qemu sandwich on a KVM that opens but cannot run a guest: TCG, and the bundle says why") {
  require_qemu_sandwich();
  ks::test::TempDir tmp("ks-qemu-sandwich");
  auto out = tmp.path / "out";
  auto exp = tmp.path / "experiment.json";
  auto e = experiment();
  e["rounds"] = 1;
  e.erase("clock");  // the main job's: auto
  e.erase("direct_hits");
  e.erase("profile");
  ks::write_file(exp, e.dump(2));

  auto wrapper_dir = tmp.path / "bin";
  fs::create_directories(wrapper_dir);
  ks::proc::Command cmd;
  cmd.argv = {ks::test::ksandwich_binary().string(), "run", exp.string(), "--out", out.string()};
  cmd.timeout = std::chrono::minutes(40);
  cmd.env = ks::test::broken_kvm_env(wrapper_dir);
  for (auto& kv : ks::test::integration_cache_env()) cmd.env.push_back(kv);
  auto r = ks::proc::run(cmd);
  INFO(r.out << r.err);
  REQUIRE(fs::exists(out / "bundle.json"));
  auto bundle = read_json(out / "bundle.json");
  for (auto& p : bundle["points"]) {
    INFO("point " << p["id"] << ": " << p.value("failure", ""));
    CHECK(p["status"] == "ok");
    CHECK(p["environment"]["virtualization"] == "tcg");
  }
  const auto& accel = bundle["machine"]["accelerator"];
  CHECK(accel["used"] == "tcg");
  CHECK(accel["requested"] == "auto");
  CHECK_THAT(accel["reason"].get<std::string>(), Catch::Contains("opens but cannot run a guest"));
  CHECK_THAT(accel["kvm_probe"].get<std::string>(), Catch::Contains("failed to set MSR 0x10a"));
  CHECK_THAT(r.err, Catch::Contains("QEMU accelerator: tcg"));
  CHECK_THAT(ks::read_file(out / "report.txt"), Catch::Contains("accelerator tcg"));

  // Asked for KVM explicitly: refused before anything is written, with QEMU's own words.
  e["qemu"]["accel"] = "kvm";
  ks::write_file(exp, e.dump(2));
  cmd.argv = {ks::test::ksandwich_binary().string(), "run", exp.string(), "--out", (tmp.path / "out2").string()};
  auto refused = ks::proc::run(cmd);
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Catch::Contains("failed to set MSR 0x10a"));
  CHECK_FALSE(fs::exists(tmp.path / "out2"));
}

#pragma once
// A realistic bundle for tests that need one: the 000_* screen (control -> patched ->
// control, 15 rounds x 10,000 4 KiB clone and dedupe ioctls) with its published means,
// raw rows consistent with those means, a filled analysis, builds with an audit and a patch
// carrying a Message-ID, per-point environment, storage, kernel health and direct hits.
// Tests change what they need (a failed gate, a failed point, a hostile name) from here.
#include <cmath>
#include <string>
#include <vector>

#include "evidence/bundle.hpp"

namespace ks::test {

struct SampleWorkload {
  std::string id;
  double control_a, patched, control_b;  // point means, ns/op
  double delta_skip_first, drift_skip_first;
};

inline const std::vector<SampleWorkload>& sample_workloads() {
  static const std::vector<SampleWorkload> w = {
      {"clone", 2943.790, 2159.123, 2970.446, -27.178, 0.702},
      {"dedupe", 3535.456, 2762.835, 3546.942, -22.128, 0.291},
  };
  return w;
}

// Round-to-round wobble that sums to zero over 15 rounds, so the rows' mean is exact.
inline double sample_wobble(int round, double mean) {
  static const double offsets[15] = {0.9, -0.4, 0.3, -0.7, 0.5, -0.2, 0.1, -0.6,
                                     0.4, -0.3, 0.6, -0.5, 0.2, -0.1, -0.5};
  return mean * offsets[round] / 100.0;  // within +-1%
}

inline evidence::Bundle make_sample_bundle() {
  using nlohmann::json;
  evidence::Bundle b;
  b.tool = {{"name", "ksandwich"},
            {"version", "0.1.0"},
            {"git_revision", "0123456789ab"},
            {"command_line", {"ksandwich", "run", "remap.json"}}};
  b.created_at = "2026-07-16T17:11:11Z";
  b.updated_at = "2026-07-16T17:42:03Z";
  b.experiment_name = "btrfs-remap-writeback-inhibition-v2";
  b.backend = "qemu";
  b.experiment = {{"name", b.experiment_name},
                  {"description", "4 KiB clone and dedupe through the writeback-inhibition path."},
                  {"backend", "qemu"},
                  {"scheme", "screen"},
                  {"rounds", 15},
                  {"workloads",
                   {{{"name", "clone"}, {"ops", 10000}, {"range_bytes", 4096}},
                    {{"name", "dedupe"}, {"ops", 10000}, {"range_bytes", 4096}}}}};
  b.machine = {{"cpu_model", "12th Gen Intel(R) Core(TM) i7-12700KF"},
               {"cores", 20},
               {"memory_mib", 32768},
               {"virtualization", "kvm"},
               {"kernel", "6.18.0"}};
  b.plan = {{"scheme", "screen"},
            {"order", {"control", "patched", "control"}},
            {"rounds", 15},
            {"warmup_rounds", 0},
            {"seed", 1}};

  auto build = [](const std::string& release, json patches, const std::string& image) {
    return json{
        {"kernel_release", release},
        {"source",
         {{"kind", "tarball"},
          {"version", "7.1.0"},
          {"sha256", "f9a48549a15aa369d42cebc08a6a72b71a53d547f9a48549a15aa369d42cebc0"}}},
        {"config_sha256", "9c1e2a77d0b4c1f3e8a6b5d4c3b2a1908f7e6d5c4b3a29181716151413121110"},
        {"compiler", "gcc (GCC) 15.2.0"},
        {"linker", "GNU ld (GNU Binutils) 2.44"},
        {"patches", patches},
        {"bzimage_sha256", image},
        {"build_seconds", 512.4}};
  };
  json patch = {{"file", "v2-btrfs-inline-buffer.patch"},
                {"sha256", "5ec741be5a89d6dae0c0608cc036512770b55d6a49e9b576b4aa3115ebfdffd3"},
                {"subject",
                 "[PATCH v2] btrfs: replace writeback inhibition xarray with a fixed "
                 "inline buffer"},
                {"author", "Leo Martins <loemra.dev@gmail.com>"},
                {"date", "Tue, 14 Jul 2026 10:02:41 -0700"},
                {"message_id", "20260714170241.1234567-1-loemra.dev@gmail.com"}};
  b.builds = {
      {"control", build("7.1.0-ks", json::array(),
                        "aaaa1111bbbb2222cccc3333dddd4444eeee5555ffff6666aaaa1111bbbb2222")},
      {"patched", build("7.1.0-ks", json::array({patch}),
                        "1234abcd1234abcd1234abcd1234abcd1234abcd1234abcd1234abcd1234abcd")},
      {"audit",
       {{{"field", "source_sha256"},
         {"status", "PASS"},
         {"control", "f9a48549a15aa369d42cebc08a6a72b71a53d547f9a48549a15aa369d42cebc0"},
         {"patched", "f9a48549a15aa369d42cebc08a6a72b71a53d547f9a48549a15aa369d42cebc0"}},
        {{"field", "config_sha256"},
         {"status", "PASS"},
         {"control", "9c1e2a77d0b4c1f3e8a6b5d4c3b2a1908f7e6d5c4b3a29181716151413121110"},
         {"patched", "9c1e2a77d0b4c1f3e8a6b5d4c3b2a1908f7e6d5c4b3a29181716151413121110"}},
        {{"field", "compiler"},
         {"status", "PASS"},
         {"control", "gcc (GCC) 15.2.0"},
         {"patched", "gcc (GCC) 15.2.0"}},
        {{"field", "kbuild_timestamp"}, {"status", "PASS"}, {"control", "@0"}, {"patched", "@0"}},
        {{"field", "patches"},
         {"status", "PASS"},
         {"control", "(none)"},
         {"patched", "5ec741be5a89d6dae0c0608cc036512770b55d6a49e9b576b4aa3115ebfdffd3"},
         {"note", "expected to differ"}}}}};

  const char* arms[3] = {"control", "patched", "control"};
  for (int id = 1; id <= 3; ++id) {
    evidence::Point p;
    p.id = id;
    p.block = 0;
    p.arm = arms[id - 1];
    p.status = "ok";
    p.kernel_release = "7.1.0-ks";
    p.started_at = "2026-07-16T17:1" + std::to_string(id) + ":00Z";
    p.seconds = 41.5;
    p.log = "points/0" + std::to_string(id) + "-" + p.arm + "/console.log";
    p.storage = {{"kind", "brd"},
                 {"device", "/dev/ram0"},
                 {"size_mib", 1024},
                 {"mkfs_options", json::array()},
                 {"mount_options", json::array()}};
    p.environment = {{"clocksource", "tsc"},
                     {"pinned_cpu", 2},
                     {"preempt", "none"},
                     {"governor", "performance"},
                     {"virtualization", "kvm"}};
    p.health = {{"findings", json::array()}, {"scanned_lines", 812}};
    p.direct_hit = json::array();
    b.points.push_back(p);
  }
  b.points[1].direct_hit = {{{"function", "btrfs_remap_file_range"},
                             {"available", true},
                             {"filtered", true},
                             {"calls", 2000},
                             {"required", true}},
                            {{"function", "btrfs_inhibit_eb_writeback"},
                             {"available", true},
                             {"filtered", true},
                             {"calls", 7473},
                             {"required", true}},
                            {{"function", "btrfs_uninhibit_all_eb_writeback"},
                             {"available", true},
                             {"filtered", true},
                             {"calls", 2033},
                             {"required", false}}};

  evidence::Analysis a;
  a.scheme = "screen";
  a.verdict = "IMPROVEMENT";
  a.bootstrap_resamples = 10000;
  a.seed = 1;
  for (auto& w : sample_workloads()) {
    double means[3] = {w.control_a, w.patched, w.control_b};
    for (int id = 1; id <= 3; ++id)
      for (int round = 0; round < 15; ++round) {
        evidence::Row r;
        r.point = id;
        r.arm = arms[id - 1];
        r.round = round;
        r.workload = w.id;
        r.ops = 10000;
        r.ns_per_op = means[id - 1] + sample_wobble(round, means[id - 1]);
        r.elapsed_ns = static_cast<uint64_t>(std::llround(*r.ns_per_op * 10000));
        b.rows.push_back(r);
      }

    evidence::WorkloadAnalysis wa;
    wa.workload = w.id;
    wa.metric = "ns_per_op";
    for (int id = 1; id <= 3; ++id)
      wa.points.push_back({id, arms[id - 1], 15, means[id - 1], means[id - 1] * 0.993,
                           means[id - 1] * 1.009, means[id - 1] * 0.0048, means[id - 1],
                           means[id - 1] * 1.001});
    wa.control_a = w.control_a;
    wa.patched = w.patched;
    wa.control_b = w.control_b;
    wa.control_midpoint = (w.control_a + w.control_b) / 2;
    wa.delta_pct = 100 * (w.patched - wa.control_midpoint) / wa.control_midpoint;
    wa.drift_pct = 100 * (w.control_b - w.control_a) / w.control_a;
    wa.delta_pct_skip_first = w.delta_skip_first;
    wa.drift_pct_skip_first = w.drift_skip_first;
    double ratio = w.patched / wa.control_midpoint;
    wa.ratio_ci = evidence::Interval{ratio, ratio - 0.011, ratio + 0.011, 0.95};
    wa.ratio_ci90 = evidence::Interval{ratio, ratio - 0.009, ratio + 0.009, 0.90};
    wa.hodges_lehmann = evidence::Interval{ratio - 0.001, ratio - 0.012, ratio + 0.010, 0.95};
    wa.bootstrap_ci = evidence::Interval{ratio, ratio - 0.004, ratio + 0.004, 0.95};
    wa.t_test_p = 0.012;
    wa.degrees_of_freedom = 1;
    wa.mann_whitney_p = 0.667;
    wa.mann_whitney_method = "exact";
    wa.notes = {
        "1 patched and 2 control point(s): the interval rests on 1 degree(s) of "
        "freedom of boot-to-boot noise, assumed equal in both arms; the confirm scheme "
        "gives a firmer claim"};
    wa.p_holm = 0.024;
    wa.within_point_sd_pct = 0.48;
    wa.between_point_sd_pct = 0.31;
    wa.mde_pct = 0.8;
    wa.rows = 45;
    wa.verdict = "IMPROVEMENT";
    wa.material = true;
    a.workloads.push_back(wa);
    a.gates.push_back({"semantic", w.id, true, "45 rows, expected_match_ratio=100"});
    a.gates.push_back({"measured", w.id, true, "both arms have measured rounds"});
  }
  a.gates.push_back({"kernel_health", "experiment", true, "no WARNING/BUG/Oops in 3 points"});
  a.gates.push_back({"direct_hit", "2", true, "every required function was called"});
  b.analysis = a;
  b.verdict = "IMPROVEMENT";
  return b;
}

// Marks a gate failed and the verdict INVALID, as the analysis does.
inline void make_invalid(evidence::Bundle& b, const std::string& gate, const std::string& scope,
                         const std::string& detail) {
  b.analysis->gates.push_back({gate, scope, false, detail});
  b.analysis->verdict = "INVALID";
  for (auto& w : b.analysis->workloads)
    if (w.workload == scope) {
      w.verdict = "INVALID";
      w.gates_failed.push_back(gate);
    }
  b.verdict = "INVALID";
}

// A fio-style workload measured in IOPS (higher is better), added to every point.
inline void add_iops_workload(evidence::Bundle& b, const std::string& id = "dio-randwrite") {
  const double means[3] = {41250.0, 33120.5, 40870.0};
  for (int id_point = 1; id_point <= 3; ++id_point)
    for (int round = 0; round < 15; ++round) {
      evidence::Row r;
      r.point = id_point;
      r.arm = b.points[id_point - 1].arm;
      r.round = round;
      r.workload = id;
      r.ops = 200000 + static_cast<uint64_t>(round) * 17;  // time-based: ops vary
      r.iops = means[id_point - 1] + sample_wobble(round, means[id_point - 1]);
      r.elapsed_ns = 5'000'000'000;
      b.rows.push_back(r);
    }
  evidence::WorkloadAnalysis wa;
  wa.workload = id;
  wa.metric = "iops";
  wa.higher_is_better = true;
  for (int p = 1; p <= 3; ++p)
    wa.points.push_back({p, b.points[p - 1].arm, 15, means[p - 1], means[p - 1] * 0.99,
                         means[p - 1] * 1.01, means[p - 1] * 0.005, means[p - 1]});
  wa.control_a = means[0];
  wa.patched = means[1];
  wa.control_b = means[2];
  wa.control_midpoint = (means[0] + means[2]) / 2;
  wa.delta_pct = 100 * (means[1] - wa.control_midpoint) / wa.control_midpoint;
  wa.drift_pct = 100 * (means[2] - means[0]) / means[0];
  wa.delta_pct_skip_first = wa.delta_pct;
  wa.verdict = "REGRESSION";
  wa.material = true;
  b.analysis->workloads.push_back(wa);
  b.analysis->verdict = "REGRESSION";
  b.verdict = "REGRESSION";
}

// A confirm run: 6 blocks of both arms in seeded order, clone only, 5 rounds per point,
// no builds (host backend), verdict NO_CHANGE.
inline evidence::Bundle make_confirm_bundle() {
  using nlohmann::json;
  evidence::Bundle b;
  b.experiment_name = "aa-calibration";
  b.backend = "host";
  b.machine = {{"cpu_model", "AMD EPYC 7B13"},
               {"cores", 2},
               {"memory_mib", 24576},
               {"virtualization", "none"}};
  b.plan = {{"scheme", "confirm"}, {"blocks", 6}, {"rounds", 5}, {"seed", 7}};
  const char* order[12] = {"control", "patched", "patched", "control", "control", "patched",
                           "patched", "control", "control", "patched", "control", "patched"};
  evidence::WorkloadAnalysis wa;
  wa.workload = "clone";
  wa.metric = "ns_per_op";
  for (int id = 1; id <= 12; ++id) {
    evidence::Point p;
    p.id = id;
    p.block = (id + 1) / 2;
    p.arm = order[id - 1];
    p.status = "ok";
    p.kernel_release = "6.18.0";
    p.environment = {{"clocksource", "tsc"}, {"pinned_cpu", 1}};
    p.storage = {{"kind", "loop"},
                 {"size_mib", 1024},
                 {"mkfs_options", json::array()},
                 {"mount_options", json::array()}};
    b.points.push_back(p);
    double mean = 5000.0 + 10.0 * id + (p.arm == "patched" ? 3.0 : 0.0);
    for (int round = 0; round < 5; ++round) {
      evidence::Row r;
      r.point = id;
      r.arm = p.arm;
      r.block = p.block;
      r.round = round;
      r.workload = "clone";
      r.ops = 10000;
      r.ns_per_op = mean + (round - 2) * 4.0;
      r.elapsed_ns = static_cast<uint64_t>(*r.ns_per_op * 10000);
      b.rows.push_back(r);
    }
    wa.points.push_back({id, p.arm, 5, mean, mean - 8, mean + 8, 6.3246, mean + 2, mean});
  }
  // Paired by block: each block's patched / control ratio of the point medians.
  for (int block = 1; block <= 6; ++block) {
    const auto& x = wa.points[2 * block - 2];
    const auto& y = wa.points[2 * block - 1];
    const auto& c = x.arm == "control" ? x : y;
    const auto& p = x.arm == "control" ? y : x;
    wa.block_ratios.push_back({block, c.point, p.point, c.median, p.median, p.median / c.median});
  }
  wa.control_trend_pct_per_block = 0.39;
  wa.sd_log_ratio = 0.0021;
  wa.mde_basis = "observed upper 80% bound";
  wa.bootstrap_ci = evidence::Interval{1.0006, 0.9990, 1.0021, 0.95};
  wa.ratio_ci = evidence::Interval{1.0006, 0.9951, 1.0062, 0.95};
  wa.ratio_ci90 = evidence::Interval{1.0006, 0.9960, 1.0052, 0.90};
  wa.mde_pct = 1.4;
  wa.verdict = "NO_CHANGE";
  wa.rows = 60;
  evidence::Analysis a;
  a.scheme = "confirm";
  a.workloads.push_back(wa);
  a.gates.push_back({"semantic", "clone", true, ""});
  a.verdict = "NO_CHANGE";
  b.analysis = a;
  b.verdict = "NO_CHANGE";
  return b;
}

}  // namespace ks::test

#include "pipeline/run.hpp"

#include <chrono>
#include <set>
#include <cstdio>
#include <fmt/format.h>

#include "analysis/analyze.hpp"
#include "analysis/decision.hpp"
#include "boot/backend.hpp"
#include "experiment/backends.hpp"
#include "evidence/bundle.hpp"
#include "evidence/clock.hpp"
#include "experiment/experiment.hpp"
#include "machine/machine.hpp"
#include "pipeline/bundle_file.hpp"
#include "pipeline/calibration.hpp"
#include "pipeline/host_changes.hpp"
#include "pipeline/kernels.hpp"
#include "pipeline/past_runs.hpp"
#include "pipeline/preflight.hpp"
#include "pipeline/records.hpp"
#include "proc/runner.hpp"
#include "report/report.hpp"
#include "source/source.hpp"
#include "storage/storage.hpp"
#include "stats/sequential.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/ownership.hpp"
#include "util/progress.hpp"

namespace ks::pipeline {
namespace {

using nlohmann::json;

// The run's progress line: the point running and its phase, points done of planned
// (a confirm run may stop before its cap: "up to N") and an ETA from the points this
// invocation ran (points run one after another; a resumed run's kept points took no time).
class RunProgress {
 public:
  explicit RunProgress(const RunOptions& o) : line_({.out = o.progress, .live = o.progress_live}) {}

  void plan(size_t planned, bool up_to) {
    planned_ = planned;
    up_to_ = up_to;
  }
  void point_started(const experiment::PlannedPoint& p) {
    label_ = fmt::format("[point {}/{} {}]", p.index + 1, planned_, p.arm);
    if (!clock_started_) {
      clock_started_ = true;
      started_ = std::chrono::steady_clock::now();
    }
    phase("starting", true);
  }
  void phase(const std::string& text, bool milestone) { line_.show(label_ + " " + text + " | " + counts(), milestone); }
  void point_finished(bool kept) {
    ++done_;
    if (!kept) ++run_now_;
  }
  void note(const std::string& text) { line_.note(text); }
  // Where the run ended (all planned, stopped early, or stopped by a failed point).
  void finished() {
    if (planned_ > 0) note("run: " + progress::count_status(done_, planned_, "points", up_to_, std::nullopt));
  }

 private:
  std::string counts() const {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    auto left = planned_ > done_ ? planned_ - done_ : 0;
    auto eta = clock_started_ ? progress::eta_seconds(static_cast<double>(run_now_),
                                                      static_cast<double>(run_now_ + left), elapsed)
                              : std::nullopt;
    return progress::count_status(done_, planned_, "points", up_to_, eta);
  }

  progress::Line line_;
  std::string label_;
  size_t planned_ = 0, done_ = 0, run_now_ = 0;
  bool up_to_ = false, clock_started_ = false;
  std::chrono::steady_clock::time_point started_;
};

// The 1-minute load average the host had when a point started (/proc/loadavg's first field).
std::optional<double> host_load(const evidence::Point& p) {
  if (!p.environment.is_object() || !p.environment.contains("loadavg") || !p.environment["loadavg"].is_string())
    return std::nullopt;
  try {
    return std::stod(p.environment["loadavg"].get<std::string>());
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Environment differences between points are warnings, not gates: the report shows them.
json environment_warnings(const std::vector<evidence::Point>& points, const json& machine) {
  json warnings = json::array();
  // Other work on the machine takes its CPUs, caches and memory bandwidth from the guest in
  // ways the canary cannot see (seen: an A/A run under a load of 16-19 on 2 cores put clone
  // point medians anywhere from 52k to 125k ns/op with every canary normal).
  const double cores = machine.is_object() && machine.value("cores", json()).is_number()
                           ? machine["cores"].get<double>() : 0;
  std::vector<std::string> busy;
  double busiest = 0;
  for (auto& p : points)
    if (auto load = host_load(p); load && p.status == "ok" && cores > 0 && *load > cores) {
      busy.push_back(std::to_string(p.id));
      busiest = std::max(busiest, *load);
    }
  if (!busy.empty())
    warnings.push_back(fmt::format("the machine was busy: {} of {} points started with a 1-minute load average "
                                   "above its {} cores (up to {:.1f}; points {}); other work shares what is measured, "
                                   "so expect far more noise than this machine's own",
                                   busy.size(), points.size(), cores, busiest, join(busy, ", ")));
  const evidence::Point* first = nullptr;
  for (auto& p : points) {
    if (p.status != "ok") continue;
    // A noise control asked for but not in force is said, not pretended (once).
    auto governor = p.environment.is_object() ? p.environment.value("governor_setting", json()) : json();
    if (!first && governor.is_object() && !governor.value("set", false))
      warnings.push_back(fmt::format("governor {} was requested but not set: {}",
                                     governor.value("requested", ""), governor.value("reason", "")));
    if (!first) {
      first = &p;
      continue;
    }
    for (auto& d : machine::environment_differences(first->environment, p.environment))
      warnings.push_back(fmt::format("point {} differs from point {} in {}", p.id, first->id, d));
  }
  return warnings;
}

void analyze_into(evidence::Bundle& bundle, const experiment::Experiment& e) {
  bundle.analysis = analyze_bundle(e, bundle);
  bundle.verdict = bundle.analysis->verdict;
  bundle.extra["warnings"] = environment_warnings(bundle.points, bundle.machine);
}

// Returns the text written.
std::string write_bundle(evidence::Bundle& bundle, const fs::path& dir) {
  bundle.updated_at = now_utc_iso8601();
  auto text = evidence::to_json(bundle).dump(2) + "\n";
  write_file_atomic(dir / "bundle.json", text);
  write_compressed_bundle(dir / kCompressedBundleName, text);  // small enough to attach to a mail
  return text;
}

void write_reports(const evidence::Bundle& bundle, const fs::path& dir, const report::Options& ro) {
  write_file_atomic(dir / "report.txt", report::text(bundle, ro));
  write_file_atomic(dir / "report.md", report::markdown(bundle, ro));
  write_file_atomic(dir / "report.html", report::html(bundle, ro));
  if (auto mail = report::mail(bundle, ro)) write_file_atomic(dir / "reply.eml", *mail);
}

evidence::Point pending_point(const experiment::PlannedPoint& p) {
  evidence::Point point;
  point.id = p.index;
  point.block = p.block;
  point.arm = p.arm;
  return point;
}

evidence::Bundle new_bundle(const experiment::Experiment& e, const RunOptions& o,
                            const std::vector<experiment::PlannedPoint>& plan, boot::Backend& backend) {
  evidence::Bundle b;
  b.tool = o.tool;
  b.created_at = now_utc_iso8601();
  b.experiment = e.raw;
  b.experiment_name = e.name;
  b.backend = e.backend;
  b.machine = backend.machine();
  // A backend without an instruction clock times rounds in wall time.
  if (b.machine.is_object() && !b.machine.contains("clock"))
    b.machine["clock"] = {{"name", "wall"},
                          {"requested", e.clock},
                          {"measures", evidence::clock_named("wall").measures},
                          {"reason", "the " + e.backend + " backend times rounds in wall time"}};
  b.plan = plan_json(e, plan);
  b.builds = json::object();
  for (auto& p : plan) b.points.push_back(pending_point(p));
  b.verdict = "INCONCLUSIVE";
  return b;
}

evidence::Bundle load_for_resume(const fs::path& dir) {
  auto path = bundle_in(dir);
  if (!fs::exists(path))
    throw UserError("cannot resume: " + path.string() + " does not exist",
                    "resume a directory that an earlier `ksandwich run --out DIR` wrote");
  return load_bundle(path);
}

boot::PointContext point_context(const experiment::Experiment& e, const experiment::PlannedPoint& p,
                                 const fs::path& out_dir, const RunKernels& kernels) {
  boot::PointContext ctx{e, e.arms.at(p.arm), p.index, p.block, out_dir,
                         out_dir / fmt::format("points/{:02d}-{}", p.index, p.arm), std::nullopt, ""};
  if (auto it = kernels.by_arm.find(p.arm); it != kernels.by_arm.end()) {
    ctx.kernel_image = it->second.bzimage;
    ctx.kernel_release = it->second.kernel_release;
  }
  return ctx;
}

// Writes nothing, not even to the kernel cache (a patch is checked on copies in a private
// temporary directory): under QEMU the kernel image is a placeholder.
// The order of the points, what each kernel is made of, and one point of each arm in full
// (the others differ only in their directories).
void print_dry_run(const experiment::Experiment& e, const std::vector<experiment::PlannedPoint>& plan,
                   const boot::Backend& backend, const fs::path& out_dir, const fs::path& repo_dir,
                   const fs::path& experiment_dir) {
  std::printf("experiment %s: backend %s, scheme %s, %zu points\n", e.name.c_str(),
              e.backend.c_str(), e.scheme.c_str(), plan.size());
  KernelPlan kernels;
  if (experiment::backend_rules(e.backend).boots_kernels) {
    kernels = describe_kernels(e, repo_dir, experiment_dir);
    std::printf("kernels (a kernel not in the build cache is built before the first point):\n%s",
                kernels.text.c_str());
  }
  std::printf("time here: %s\n", describe_time(e, plan.size(), kernels, out_dir.parent_path()).c_str());
  std::string order;
  for (auto& p : plan) order += fmt::format("{}{} {}", p.index == 0 ? "" : ", ", p.index, p.arm);
  std::printf("order: %s\n", order.c_str());
  // The first arm's point in full; another arm's only where it differs (its kernel, mostly).
  std::set<std::string> shown;
  std::optional<std::pair<std::string, std::vector<std::string>>> first;
  for (auto& p : plan) {
    if (!shown.insert(p.arm).second) continue;
    auto text = backend.describe_point(point_context(e, p, out_dir, RunKernels{}));
    auto lines = split(text, '\n');
    std::printf("\nthe %s arm's points, as point %d (block %d)", p.arm.c_str(), p.index, p.block);
    if (!first || first->second.size() != lines.size()) {
      std::printf(":\n%s", text.c_str());
      if (!first) first.emplace(p.arm, lines);
      continue;
    }
    if (lines == first->second) {
      std::printf(": the same as the %s arm's\n", first->first.c_str());
      continue;
    }
    std::printf(", as the %s arm's but for these lines:\n", first->first.c_str());
    for (size_t i = 0; i < lines.size(); ++i)
      if (lines[i] != first->second[i]) std::printf("%s\n", lines[i].c_str());
  }
}

}  // namespace

// A damaged run directory (points cut short, an edited plan or experiment) would be finished
// into a bundle its own validate rejects.
void check_resumable(const evidence::Bundle& b, experiment::Experiment e, const fs::path& dir) {
  auto damaged = [&](const std::string& what) {
    return UserError("cannot resume: " + dir.string() + " is not as its run left it: " + what,
                     "start a new run with --out NEWDIR");
  };
  if (auto why = size_as_planned(b, e)) throw damaged(*why);  // the size chosen when the run began
  auto plan = experiment::plan_points(e);
  if (b.plan != plan_json(e, plan)) throw damaged("its plan is not the one its experiment gives");
  if (b.points.size() > plan.size() || (b.points.size() < plan.size() && !evidence::stopped_early(b)))
    throw damaged(fmt::format("{} points where the plan has {}", b.points.size(), plan.size()));
  for (size_t i = 0; i < b.points.size(); ++i)
    if (b.points[i].id != plan[i].index || b.points[i].arm != plan[i].arm || b.points[i].block != plan[i].block)
      throw damaged(fmt::format("point {} is not the plan's point {} ({} in block {})", b.points[i].id, i,
                                plan[i].arm, plan[i].block));
  storage::existing_run_id(dir);
}

namespace {

// A resumed run must boot the kernels its finished points booted.
void check_same_kernels(const json& recorded, const json& now) {
  auto sha = [](const json& builds, const std::string& arm) {
    auto p = json::json_pointer("/" + arm + "/bzimage/sha256");
    return builds.is_object() && builds.contains(p) && builds[p].is_string() ? builds[p].get<std::string>()
                                                                             : std::string();
  };
  for (std::string arm : {"control", "patched"}) {
    auto was = sha(recorded, arm), is = sha(now, arm);
    if (!was.empty() && was != is)
      throw UserError("cannot resume: the " + arm + " kernel is not the one the finished points booted (bzImage " +
                          was.substr(0, 12) + " then, " + is.substr(0, 12) + " now)",
                      "start a new run with --out NEWDIR");
  }
}

// A resumed run must run its points under the accelerator its finished points ran under.
void check_same_accelerator(const json& recorded, const json& now) {
  auto used = [](const json& m) {
    auto p = json::json_pointer("/accelerator/used");
    return m.is_object() && m.contains(p) && m[p].is_string() ? m[p].get<std::string>() : std::string();
  };
  if (used(recorded) != used(now))
    throw UserError("cannot resume: the finished points ran under " + used(recorded) + ", this machine now gives " +
                        used(now),
                    "resume where KVM behaves as it did (or set qemu.accel), or start a new run with --out NEWDIR");
}

// Where the time went, for the report and the time-budget benchmark. A resumed run keeps
// the build timings of the run that built the kernels.
json timings_json(const evidence::Bundle& b, json build_timings, double analysis_seconds) {
  json points = json::array();
  for (auto& p : b.points) {
    json t{{"point", p.id}, {"arm", p.arm}, {"seconds", p.seconds}};
    if (p.environment.is_object() && p.environment.contains("guest_timeline_s")) {
      const auto& g = p.environment["guest_timeline_s"];
      auto started = g.value("agent_started", json()), done = g.value("workloads_done", json());
      t["boot_to_agent_s"] = started;
      if (started.is_number() && done.is_number()) t["workload_s"] = done.get<double>() - started.get<double>();
    }
    points.push_back(t);
  }
  return {{"builds", std::move(build_timings)}, {"points", points}, {"analysis_s", analysis_seconds}};
}

// A confirm run's number of blocks, chosen before its first point (statistics.md): the
// experiment's own `blocks` when it gives one; else, per workload, the blocks that reach
// target_mde_pct at power 0.8 (exact noncentral t, alpha 0.05 split over the workloads) from
// an upper 80% bound of the spread a calibration measured on this machine, backend, kernel
// and workload shape;
// the largest of them, capped by max_blocks. A workload without a calibration gets
// max_blocks, and the bundle says so.
json size_confirm_run(experiment::Experiment& e, const evidence::Bundle& bundle) {
  json sizing{{"min_blocks", e.min_blocks}, {"max_blocks", e.max_blocks}, {"target_mde_pct", e.target_mde_pct}};
  if (e.raw.contains("blocks")) {
    sizing["blocks"] = e.blocks;
    sizing["reason"] = "the experiment fixes blocks = " + std::to_string(e.blocks);
    return sizing;
  }
  auto key = calibration_key(calibration_identity(bundle));
  auto calibration = load_calibration(source::default_cache_root(), key);
  sizing["calibration"] = calibration ? json{{"key", key},
                                             {"file", calibration_file(source::default_cache_root(), key).string()},
                                             {"created_at", calibration->created_at},
                                             {"bundle", calibration->bundle}}
                                      : json();
  uint32_t blocks = e.min_blocks;
  json workloads = json::array();
  std::vector<std::string> uncalibrated, short_of_power;
  for (auto& w : e.workloads) {
    json row{{"workload", w.id()}};
    const WorkloadNoise* noise = nullptr;
    if (calibration)
      if (auto it = calibration->workloads.find(workload_shape_key(e, w)); it != calibration->workloads.end())
        noise = &it->second;
    if (!noise) {
      uncalibrated.push_back(w.id());
      blocks = e.max_blocks;
      row["blocks"] = e.max_blocks;
    } else {
      // A calibration of a few points estimates the spread loosely: planned on the estimate
      // itself, over half of runs fall short of the power (statistics.md); on its upper 80%
      // bound, few do.
      const double sd = noise->points >= 2 ? analysis::sd_upper_bound(noise->sd_block_log_ratio(), noise->points - 1)
                                           : noise->sd_block_log_ratio();
      auto plan = stats::plan_blocks(sd, e.target_mde_pct, 0.05, 0.8,
                                     static_cast<int>(e.workloads.size()), std::max(3, static_cast<int>(e.min_blocks)),
                                     std::max(3, static_cast<int>(e.max_blocks)));
      if (!plan.reached) short_of_power.push_back(fmt::format("{} ({:.2f})", w.id(), plan.power));
      row["sd_block_log_ratio_pct"] = 100 * noise->sd_block_log_ratio();
      row["planned_sd_block_log_ratio_pct"] = 100 * sd;
      row["calibration_points"] = noise->points;
      row["blocks"] = plan.k_max;
      row["power_at_target"] = plan.power;
      row["reaches_target"] = plan.reached;
      blocks = std::max(blocks, static_cast<uint32_t>(plan.k_max));
    }
    workloads.push_back(row);
  }
  e.blocks = std::min(blocks, e.max_blocks);
  sizing["workloads"] = workloads;
  sizing["blocks"] = e.blocks;
  sizing["reason"] =
      uncalibrated.empty() && !short_of_power.empty()
          ? fmt::format("even max_blocks = {} gives less than power 0.8 at an MDE of {}% for {} by the "
                        "calibration of {}; raise max_blocks or target_mde_pct",
                        e.blocks, e.target_mde_pct, join(short_of_power, ", "), calibration->created_at)
      : uncalibrated.empty()
          ? fmt::format("{} blocks reach an MDE of {}% at power 0.8 by the calibration of {}", e.blocks,
                        e.target_mde_pct, calibration->created_at)
          : fmt::format("no calibration of {} on this machine, backend and kernel: up to max_blocks = {}, "
                        "stopping early when every workload is decided (`ksandwich calibrate` sizes the run)",
                        join(uncalibrated, ", "), e.max_blocks);
  return sizing;
}

// The most blocks any workload's analysis left out (a failed point, one disturbed throughout).
uint32_t most_blocks_dropped(const evidence::Analysis& a) {
  size_t most = 0;
  for (auto& w : a.workloads) most = std::max(most, w.blocks_dropped.size());
  return static_cast<uint32_t>(most);
}

// Whether every workload is decided: nothing left that more blocks could settle.

}  // namespace

int run(const RunOptions& o) {
  RunProgress progress(o);
  auto say = [&progress](const std::string& line) { progress.note(line); };
  evidence::Bundle bundle;
  experiment::Experiment e;
  fs::path experiment_dir;
  if (o.resume) {
    // Before its bundle is read as the run's own: the experiment in it names the device a
    // resumed run formats, so only a bundle.json root wrote, in a directory only root may
    // change, is taken at its word.
    require_own_run_dir(o.out_dir);
    bundle = load_for_resume(o.out_dir);
    if (bundle.schema_version != evidence::kSchemaVersion)
      throw UserError("cannot resume: " + (o.out_dir / "bundle.json").string() + " has schema_version " +
                          std::to_string(bundle.schema_version) + "; this ksandwich writes " +
                          std::to_string(evidence::kSchemaVersion),
                      "resume it with the ksandwich that started it, or start a new run");
    e = experiment::parse(bundle.experiment);
    check_resumable(bundle, e, o.out_dir);
    if (!o.experiment_file.empty() &&
        experiment::parse_file(o.experiment_file).raw != bundle.experiment)
      throw UserError("cannot resume: " + o.experiment_file.string() + " is not the experiment " +
                          o.out_dir.string() + " was started with",
                      "resume with `ksandwich run --resume " + o.out_dir.string() +
                          "` alone, or start a new run of the changed experiment");
    if (bundle.extra.is_object() && bundle.extra.contains("experiment_file")) {
      if (!bundle.extra["experiment_file"].is_string())
        throw UserError("cannot resume: " + (o.out_dir / "bundle.json").string() + ": experiment_file is not a path",
                        "resume a run directory as its run left it, or start a new run");
      experiment_dir = fs::path(bundle.extra["experiment_file"].get<std::string>()).parent_path();
    }
  } else {
    if (o.experiment) {
      e = experiment::parse(*o.experiment);
    } else {
      if (!fs::exists(status_as_invoking_user(o.experiment_file)))
        throw UserError("experiment file " + o.experiment_file.string() + " does not exist",
                        "pass a file such as configs/experiments/default.json");
      e = experiment::parse_file(o.experiment_file);
    }
    experiment_dir = fs::absolute(o.experiment_file).parent_path();
  }
  for (auto& w : e.workloads)  // fio runs as root what its job file says (exec_prerun= is a shell command)
    if (!w.fio_job.empty()) require_trusted_input(o.repo_dir / "workloads/fio" / w.fio_job, "fio job");
  auto plan = experiment::plan_points(e);
  std::shared_ptr<boot::Backend> backend =
      o.backend ? o.backend
                : boot::make_backend(e.backend, {.agent = o.agent,
                                                 .data_dir = o.repo_dir,
                                                 .fio_jobs_dir = o.repo_dir / "workloads/fio",
                                                 .accel = e.qemu.accel,
                                                 .cache_dir = source::default_cache_root(),
                                                 .clock = e.clock,
                                                 .vcpus = e.qemu.vcpus});
  const bool needs_kernels = experiment::backend_rules(e.backend).boots_kernels;
  backend->check_experiment(e);
  if (needs_kernels) check_kernel_inputs(e, o.repo_dir, experiment_dir);
  if (o.dry_run) {
    print_dry_run(e, plan, *backend, o.out_dir, o.repo_dir, experiment_dir);
    return kExitOk;
  }
  // The checks first (they touch nothing, and the storage guard must refuse a device before
  // anything opens it to lock it); then one measuring run per machine and a journal of what
  // it changes. A test's injected backend changes nothing on the machine: it takes neither.
  std::optional<HostChanges> host_changes;
  if (!o.backend) {
    preflight(e, o);
    backend->check_machine(e);
    host_changes.emplace(o.state_dir, o.out_dir, e, o.resume, backend->undisturbed_clock());
  }
  if (!o.resume && fs::exists(o.out_dir) && !fs::is_empty(o.out_dir))
    throw UserError("output directory " + o.out_dir.string() + " is not empty",
                    "choose a new --out DIR, or continue it with --resume " + o.out_dir.string());
  require_own_run_dir(o.out_dir);
  // The kernels before the output directory: a patch that does not apply, a failed or an
  // interrupted build leaves no half-made run behind (the build log stays in the cache).
  RunKernels kernels;
  if (needs_kernels) kernels = build_kernels(e, o.repo_dir, experiment_dir);
  std::optional<fs::path> control_kernel;
  if (auto it = kernels.by_arm.find("control"); it != kernels.by_arm.end()) control_kernel = it->second.bzimage;
  backend->preflight(control_kernel);
  create_output_directory(o.out_dir);
  fs::create_directories(o.out_dir / "logs");
  // Named now, not only at the end: a run takes minutes to hours, and whoever watches it may
  // want its logs, or to resume or clean it up.
  say(fmt::format("output: {} (bundle.json after every point; if interrupted: ksandwich run --resume {})",
                  o.out_dir.string(), shell_quote(o.out_dir.string())));
  if (host_changes) host_changes->open_journal();
  proc::set_command_log(o.out_dir / "logs/commands.jsonl");
  for (auto& [arm, built] : kernels.by_arm)
    fs::copy_file(built.build_dir / "build.log", o.out_dir / "logs" / ("build-" + arm + ".log"),
                  fs::copy_options::overwrite_existing);
  json build_timings = kernels.timings;
  if (o.resume) {
    check_same_kernels(bundle.builds, kernels.builds);
    check_same_accelerator(bundle.machine, backend->machine());
    if (bundle.extra.is_object() && bundle.extra.contains("timings") && bundle.extra["timings"].is_object())
      build_timings = bundle.extra["timings"].value("builds", json());
  } else {
    bundle = new_bundle(e, o, plan, *backend);
    bundle.extra["experiment_file"] = fs::absolute(o.experiment_file).string();
  }
  if (needs_kernels) bundle.builds = kernels.builds;
  if (e.scheme == "confirm") {
    if (o.resume) {
      e.blocks = bundle.plan.value("blocks", e.blocks);  // the size chosen when the run began (checked)
      e.replacements = bundle.plan.value("replacements", 0u);
    } else {
      bundle.extra["sizing"] = size_confirm_run(e, bundle);
      say("confirm: " + bundle.extra["sizing"]["reason"].get<std::string>());
    }
    plan = experiment::plan_points(e);
    if (!o.resume) {
      bundle.plan = plan_json(e, plan);
      bundle.points.clear();
      for (auto& p : plan) bundle.points.push_back(pending_point(p));
    }
  }
  write_bundle(bundle, o.out_dir);

  progress.plan(std::min(plan.size(), bundle.points.size()), e.scheme == "confirm");
  bool stopped_now = false;
  for (size_t next = 0; next < plan.size(); ++next) {  // the plan grows when a block is replaced
    const auto planned = plan[next];
    if (static_cast<size_t>(planned.index) >= bundle.points.size()) break;  // stopped early: decided
    auto& point = bundle.points.at(planned.index);
    // After a kernel switch the same run goes on: its failed points stay failed (and stop it
    // as they did, when the experiment says so).
    if (point.status == "ok" || (o.after_switch && point.status == "failed")) {
      say(fmt::format("[point {}/{} {}] already {}, kept", planned.index + 1, plan.size(), planned.arm,
                      point.status == "ok" ? "done" : "failed"));
      progress.point_finished(true);
      if (point.status == "failed" && !e.continue_on_failure) break;
      continue;
    }
    std::erase_if(bundle.rows, [&](auto& r) { return r.point == planned.index; });
    auto started = std::chrono::steady_clock::now();
    point.started_at = now_utc_iso8601();
    say(fmt::format("[point {}/{} {}] running {} workload(s), {} rounds each", planned.index + 1,
                    plan.size(), planned.arm, e.workloads.size(), e.rounds));

    boot::PointResult result;
    progress.point_started(planned);
    try {
      auto context = point_context(e, planned, o.out_dir, kernels);
      context.phase = [&progress](const std::string& phase, bool milestone) { progress.phase(phase, milestone); };
      result = backend->run_point(context);
    } catch (const Interrupted&) {
      throw;
    } catch (const std::exception& err) {  // the backend's cleanups ran while this unwound;
      // even a refusal found only now (a guard, a knob) fails this point, not the whole run:
      // the bundle stays consistent and --resume can finish it once the cause is fixed.
      result = {};
      result.status = "failed";
      result.failure = err.what();
    }
    point.status = result.status;
    point.failure = result.failure;
    point.kernel_release = result.kernel_release;
    point.storage = result.storage;
    point.environment = result.environment;
    point.health = result.health;
    point.direct_hit = result.direct_hit;
    point.profile = result.profile;
    point.log = result.log;
    point.console_tail = result.console_tail;
    point.finished_at = now_utc_iso8601();
    point.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (!result.started_at.empty()) point.started_at = result.started_at;
    if (result.seconds) point.seconds = *result.seconds;
    auto rows = rows_from_agent(result.agent_records, planned.index, planned.arm, planned.block);
    bundle.rows.insert(bundle.rows.end(), rows.begin(), rows.end());

    analyze_into(bundle, e);
    write_bundle(bundle, o.out_dir);
    progress.point_finished(false);
    say(fmt::format("[point {}/{} {}] {} in {:.1f} s{}", planned.index + 1, plan.size(), planned.arm,
                    point.status, point.seconds, point.failure.empty() ? "" : ": " + point.failure));
    if (point.status != "ok" && !e.continue_on_failure) {
      say("stopping: the experiment says continue_on_failure = false");
      break;
    }
    // A confirm run looks after each whole block from min_blocks on; the group-sequential
    // boundaries in the analysis make stopping at the first decisive look honest.
    // Only where every later point is still to run (a resumed run may have finished them).
    const bool block_done = planned.index + 1 == static_cast<int>(plan.size()) ||
                            plan[static_cast<size_t>(planned.index) + 1].block != planned.block;
    const auto blocks_done = static_cast<uint32_t>(planned.block + 1);
    const bool rest_pending = std::all_of(bundle.points.begin() + planned.index + 1, bundle.points.end(),
                                          [](auto& p) { return p.status == "pending"; });
    if (e.scheme == "confirm" && block_done && blocks_done >= e.min_blocks && bundle.analysis &&
        evidence::all_decided(*bundle.analysis) && planned.index + 1 < static_cast<int>(plan.size()) && rest_pending) {
      bundle.extra["stopped"] = {{"blocks_run", blocks_done},
                                 {"blocks_planned", e.blocks},
                                 {"early", true},
                                 {"reason", fmt::format("every workload was decided after {} of {} blocks",
                                                        blocks_done, e.blocks + e.replacements)}};
      std::erase_if(bundle.points, [&](auto& p) { return p.block > planned.block && p.status == "pending"; });
      stopped_now = true;
      say("stopping: " + bundle.extra["stopped"]["reason"].get<std::string>());
      break;
    }
    // A block left out is replaced at the end while the budget lasts, unless nothing is left to decide.
    if (e.scheme == "confirm" && block_done && bundle.analysis && !evidence::all_decided(*bundle.analysis)) {
      const auto dropped = most_blocks_dropped(*bundle.analysis);
      if (dropped > e.replacements && e.replacements < e.replacement_blocks) {
        const auto added = std::min(dropped, e.replacement_blocks) - e.replacements;
        e.replacements += added;
        plan = experiment::plan_points(e);
        bundle.plan = plan_json(e, plan);
        for (size_t i = bundle.points.size(); i < plan.size(); ++i) bundle.points.push_back(pending_point(plan[i]));
        write_bundle(bundle, o.out_dir);
        progress.plan(plan.size(), true);
        say(fmt::format("{} block(s) left out so far: {} more added at the end ({} of replacement_blocks = {})",
                        dropped, added, e.replacements, e.replacement_blocks));
      }
    }
  }
  const bool stopped_before = evidence::stopped_early(bundle);
  if (e.scheme == "confirm" && !stopped_now && !stopped_before) {
    int blocks_run = 0;
    for (auto& p : bundle.points) blocks_run = std::max(blocks_run, p.status == "pending" ? 0 : p.block + 1);
    const auto planned = static_cast<int>(e.blocks + e.replacements);
    const auto replaced =
        e.replacements > 0 ? fmt::format(" ({} replacing blocks left out)", e.replacements) : std::string();
    bundle.extra["stopped"] = {
        {"blocks_run", blocks_run},
        {"blocks_planned", e.blocks},
        {"reason", blocks_run < planned
                       ? fmt::format("stopped after {} of {} blocks by a failed point", blocks_run, planned)
                   : bundle.analysis && evidence::all_decided(*bundle.analysis)
                       ? fmt::format("every workload was decided after all {} planned blocks{}", planned, replaced)
                       : fmt::format("all {} planned blocks{} ran (the cap) and some workload is still undecided",
                                     planned, replaced)}};
  }

  progress.finished();
  auto analysis_started = std::chrono::steady_clock::now();
  analyze_into(bundle, e);
  bundle.extra["timings"] = timings_json(
      bundle, build_timings,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - analysis_started).count());
  auto text = write_bundle(bundle, o.out_dir);
  auto reply = o.reply;
  reply.attachment = bundle_attachment(text);
  write_reports(bundle, o.out_dir, reply);
  if (o.print_report) {
    std::fputs(report::text(bundle, reply).c_str(), stdout);
    std::printf("\nbundle: %s\n", (o.out_dir / "bundle.json").c_str());
  }
  return analysis::exit_code_for(bundle);
}

}  // namespace ks::pipeline

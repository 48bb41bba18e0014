// `ksandwich submit --slurm EXP...|SERIES_DIR` and `ksandwich gather DIR`: the
// experiments fanned out as Slurm jobs (cluster/slurm.hpp), then their bundles collected
// into one report (report/gather.hpp).
#include <fmt/format.h>
#include <sys/stat.h>

#include <set>
#include <thread>

#include "analysis/analyze.hpp"
#include "cli/commands.hpp"
#include "cluster/slurm.hpp"
#include "experiment/experiment.hpp"
#include "experiment/strict_json.hpp"
#include "kernel/series.hpp"
#include "pipeline/bundle_file.hpp"
#include "pipeline/validate.hpp"
#include "proc/runner.hpp"
#include "report/gather.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/ownership.hpp"

namespace ks::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The typed JSON file at PATH (WHAT names it in the message), nullopt when there is none.
template <class T>
std::optional<T> read_typed(const fs::path& path, const std::string& what, const std::string& hint) {
  if (!fs::is_regular_file(path)) return std::nullopt;
  try {
    return experiment::parse_json_strict(read_input_file(path, kMaxInputBytes, what), path.string()).get<T>();
  } catch (const json::exception& e) {
    throw UserError(path.string() + " is not a " + what + ": " + e.what(), hint);
  }
}

std::optional<kernel::SeriesManifest> read_series(const fs::path& dir) {
  const std::string hint = "make the directory again with `ksandwich series EXPERIMENT --mbox FILE`";
  auto series = read_typed<kernel::SeriesManifest>(dir / kernel::kSeriesManifestName, "series manifest", hint);
  // Each step's experiment is the one `series` wrote for it, in the directory (sixty-second
  // attack: a manifest naming /any/file, or experiments/../.., had submit read and run it).
  if (!series) return series;
  for (auto& s : series->steps)
    if (!experiment::is_plain_name(s.name))
      throw UserError(dir.string() + "'s " + kernel::kSeriesManifestName + " names a run \"" + one_line(s.name.substr(0, 64)) +
                          "\" that is not a name, which ksandwich never writes",
                      hint);
    else if (s.experiment != "experiments/" + s.name + ".json")
      throw UserError(dir.string() + "'s " + kernel::kSeriesManifestName + " names \"" + one_line(s.experiment.substr(0, 80)) +
                          "\" as a step's experiment, which `ksandwich series` never writes",
                      hint);
    // gather checks the patch each step adds by this name (seventieth attack: an empty one
    // let any patch pass).
    else if (!s.patch_file.starts_with("patches/") || !experiment::is_plain_name(s.patch_file.substr(8)))
      throw UserError(dir.string() + "'s " + kernel::kSeriesManifestName + " names \"" + one_line(s.patch_file.substr(0, 80)) +
                          "\" as a step's patch file, which `ksandwich series` never writes",
                      hint);
  return series;
}

std::optional<cluster::Manifest> read_manifest(const fs::path& dir) {
  return read_typed<cluster::Manifest>(dir / cluster::kManifestName, "submit manifest",
                                       "submit again into a new --dir");
}

void set_submit(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand(
      "submit", "run experiments (or a `ksandwich series` directory) as Slurm jobs: one job per unique "
                "kernel build, then one job per experiment on one node after its builds");
  set_exit_status(cmd, {{0, "the jobs were submitted"}});
  struct Args {
    bool slurm = false;
    std::string partition, dir;
    std::vector<std::string> sbatch_args, inputs;
  };
  auto args = std::make_shared<Args>();
  cmd->add_flag("--slurm", args->slurm, "submit to Slurm with sbatch (the one scheduler there is)");
  cmd->add_option("--partition", args->partition, "the Slurm partition of every job");
  cmd->add_option("--sbatch-arg", args->sbatch_args,
                  "another sbatch option for every job, e.g. --sbatch-arg=--time=60 (repeatable)");
  cmd->add_option("--dir", args->dir,
                  "submit directory on a shared path: logs/, results/<name>/, submit.json (default: the "
                  "series directory, else results/submit-<time>)");
  cmd->add_option("inputs", args->inputs, "experiment files, or one directory written by `ksandwich series`")
      ->required();
  cmd->callback([args, &context] {
    if (!args->slurm)
      throw UserError("submit needs a scheduler", "add --slurm (Slurm is the one scheduler ksandwich submits to)");
    if (!proc::have_program("sbatch"))
      throw UserError("sbatch is not installed on this machine",
                      "run submit on a Slurm login node (Debian: apt-get install slurm-client)");
    std::vector<cluster::ExperimentInput> inputs;
    std::optional<kernel::SeriesManifest> series;
    fs::path dir;
    if (args->inputs.size() == 1 && fs::is_directory(status_as_invoking_user(args->inputs[0]))) {
      auto series_dir = fs::absolute(args->inputs[0]).lexically_normal();
      require_trusted_input(series_dir, "series directory");  // the jobs read its experiments when they start
      series = read_series(series_dir);
      if (!series)
        throw UserError(args->inputs[0] + " holds no " + kernel::kSeriesManifestName,
                        "name experiment files, or a directory written by `ksandwich series`");
      dir = series_dir;
      for (auto& s : series->steps) {
        auto in = cluster::read_input(series_dir / s.experiment, context.repo_dir);
        in.patch_index = s.index;
        in.patch_subject = s.subject;
        inputs.push_back(std::move(in));
      }
    } else {
      for (auto& file : args->inputs) {
        check_json_file(file, "experiment");
        inputs.push_back(cluster::read_input(file, context.repo_dir));
      }
      auto stamp = now_utc_iso8601();
      std::erase(stamp, ':');
      dir = fs::absolute(args->dir.empty() ? fs::path("results") / ("submit-" + stamp) : fs::path(args->dir))
                .lexically_normal();
    }
    if (!args->dir.empty()) dir = fs::absolute(args->dir).lexically_normal();
    check_output_dir(dir, "--dir");
    // sbatch reads its --output as a pattern (%j, %u, ...; a backslash turns that off): the
    // jobs' logs would go to a directory no check looked at (seventieth attack: "p%u%j").
    if (dir.string().find_first_of("%\\") != std::string::npos)
      throw UserError("the submit directory " + dir.string() + " holds a % or a backslash, which sbatch would expand in its jobs' log paths",
                      "submit into a directory whose path has neither (--dir)");
    if (fs::exists(dir / cluster::kManifestName))
      throw UserError(dir.string() + " was submitted already (it holds " + cluster::kManifestName + ")",
                      "`ksandwich gather " + shell_quote(dir.string()) + "` collects it; submit again with another --dir");

    std::vector<std::string> options;
    if (!args->partition.empty()) options.push_back("--partition=" + args->partition);
    options.insert(options.end(), args->sbatch_args.begin(), args->sbatch_args.end());
    auto jobs = cluster::plan_jobs(inputs, context.ksandwich, dir);

    // A refused submission (its jobs are cancelled) takes away what it made here: the script,
    // and each directory it created while that is still empty.
    std::vector<fs::path> made;
    for (auto& d : {dir, dir / "logs", dir / "results"})
      if (!fs::exists(d)) made.push_back(d);
    auto script = dir / cluster::kJobScriptName;
    try {
      create_output_directory(dir);
      fs::create_directories(dir / "logs");
      fs::create_directories(dir / "results");
      write_file_atomic(script, "#!/bin/sh\n# One ksandwich job: the command is this script's arguments.\nexec \"$@\"\n");
      fs::permissions(script, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
      cluster::submit(jobs, options, dir);
    } catch (...) {
      std::error_code ec;
      fs::remove(script, ec);
      for (auto d = made.rbegin(); d != made.rend(); ++d) fs::remove(*d, ec);
      throw;
    }

    cluster::Manifest m;
    m.submitted_at = now_utc_iso8601();
    m.dir = dir.string();
    m.series = series.has_value();
    m.sbatch_options = options;
    for (auto& in : inputs)
      m.experiments.push_back({in.name, in.file.string(), (dir / "results" / in.name).string(), in.patch_index,
                               in.patch_subject});
    m.jobs = jobs;
    write_file_atomic(dir / cluster::kManifestName, json(m).dump(2) + "\n");

    bool builds = false;
    for (auto& j : jobs) {
      fmt::print("{:<8} {:<6} {}\n", j.job_id, j.kind, j.name);
      builds = builds || j.kind == "build";
    }
    if (builds)
      fmt::print("kernels are built into {}: every node must see the same directory (a shared path)\n",
                 getenv("KSANDWICH_CACHE") ? getenv("KSANDWICH_CACHE") : "/var/cache/ksandwich ($KSANDWICH_CACHE unset)");
    fmt::print("submitted {} job{} from {}; collect with: ksandwich gather {}\n", jobs.size(),
               jobs.size() == 1 ? "" : "s", dir.string(), shell_quote(dir.string()));
  });
}

void set_gather(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand(
      "gather", "wait for the jobs of a `submit` directory (or read a `series` directory) and collect their "
                "bundles into one report; exit code as `run`'s, over every run");
  auto exits = verdict_exits();  // over every run
  exits.back().second += "; with --no-wait also while jobs remain";
  set_exit_status(cmd, exits);
  struct Args {
    std::string dir, format = "text";
    bool no_wait = false;
    double timeout_min = 24 * 60, poll_s = 10;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("dir", args->dir, "a directory written by `submit` (submit.json) or `series` (series.json)")
      ->required();
  cmd->add_flag("--no-wait", args->no_wait,
                "report the jobs' states now (squeue, sacct) and what has finished; exit 4 while jobs remain");
  cmd->add_option("--timeout", args->timeout_min, "minutes to wait for the jobs (default 1440)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--poll", args->poll_s, "seconds between looks at the queue (default 10)")
      ->check(CLI::Range(0.1, 3600.0));
  cmd->add_option("--format", args->format, "text | markdown | json")
      ->check(CLI::IsMember({"text", "markdown", "json"}));
  cmd->callback([args, &context] {
    auto dir = fs::absolute(args->dir).lexically_normal();
    check_output_dir(dir, "gather's DIR");  // its reports are written there
    auto manifest = read_manifest(dir);
    auto series = read_series(dir);
    // The runs either file names, as `submit` and `series` write them: at most a series' worth,
    // each a plain name and each once (gather prints them at the start of lines and reads each
    // one's DIR/results/<name>; twenty-second and twenty-fourth attacks).
    auto check_names = [&](const std::vector<std::string>& names, const char* file) {
      // None is no pass either: `submit` and `series` never write an empty list (thirty-sixth
      // attack: "0 runs", exit 0).
      if (names.empty())
        throw UserError(args->dir + "'s " + file + " lists no run, which ksandwich never writes",
                        "name the directory `ksandwich submit` or `ksandwich series` wrote");
      if (names.size() > kernel::kMaxSeriesPatches)
        throw UserError(args->dir + "'s " + file + " lists " + std::to_string(names.size()) + " runs; at most " +
                            std::to_string(kernel::kMaxSeriesPatches) + " are gathered",
                        "name the directory `ksandwich submit` or `ksandwich series` wrote");
      std::set<std::string> seen;
      for (auto& name : names)
        if (!experiment::is_plain_name(name) || !seen.insert(name).second)
          throw UserError(args->dir + "'s " + file + " names a run \"" + one_line(name.substr(0, 64)) +
                              "\" that is not a name or named twice, which ksandwich never writes",
                          "name the directory `ksandwich submit` or `ksandwich series` wrote");
    };
    if (manifest) {
      std::vector<std::string> names;
      for (auto& e : manifest->experiments) names.push_back(e.name);
      check_names(names, cluster::kManifestName);
    }
    if (series) {
      std::vector<std::string> names;
      for (auto& s : series->steps) names.push_back(s.name);
      check_names(names, kernel::kSeriesManifestName);
    }
    if (!manifest && !series)
      throw UserError(args->dir + " holds neither " + cluster::kManifestName + " nor " + kernel::kSeriesManifestName,
                      "name the directory `ksandwich submit` or `ksandwich series` wrote");

    std::map<std::string, std::string> states;  // experiment name -> its run job's state
    bool pending = false;
    if (manifest) {
      std::vector<std::string> ids;
      for (auto& j : manifest->jobs) ids.push_back(j.job_id);
      auto deadline = std::chrono::steady_clock::now() +
                      std::chrono::milliseconds(static_cast<long>(args->timeout_min * 60000));
      std::map<std::string, std::string> by_id;
      for (;;) {
        by_id = cluster::job_states(ids);
        pending = false;
        for (auto& [id, state] : by_id) pending = pending || (!cluster::is_final_state(state) && state != "UNKNOWN");
        if (!pending || args->no_wait || std::chrono::steady_clock::now() > deadline) break;
        proc::throw_if_interrupted();
        std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<long>(args->poll_s * 1000)));
      }
      if (args->no_wait || pending) {
        for (auto& j : manifest->jobs)
          fmt::print(stderr, "{:<8} {:<11} {:<6} {}\n", one_line(j.job_id), one_line(by_id[j.job_id]), one_line(j.kind),
                     one_line(j.name));
      }
      if (pending && !args->no_wait)
        fmt::print(stderr, "ksandwich: gave up waiting after {} minutes; what finished follows\n", args->timeout_min);
      for (auto& j : manifest->jobs)
        if (j.kind == "run") states[j.experiment] = by_id[j.job_id];
    }

    // The runs to show, in order; a series' are its steps 1..N, as `series` writes them.
    struct Step {
      std::string name;
      int index = 0;
      std::string subject;
      fs::path experiment_file;
      std::string patch_file;  // series.json's; a submit manifest names none
    };
    std::vector<Step> steps;
    if (manifest)
      for (auto& e : manifest->experiments) steps.push_back({e.name, e.patch_index, e.patch_subject, e.file, ""});
    else
      for (auto& s : series->steps)
        steps.push_back({s.name, s.index, s.subject, dir / "experiments" / (s.name + ".json"), s.patch_file});
    const bool is_series = manifest ? manifest->series : true;
    for (size_t i = 0; is_series && i < steps.size(); ++i)
      if (steps[i].index != static_cast<int>(i) + 1)
        throw UserError(args->dir + "'s " + (manifest ? cluster::kManifestName : kernel::kSeriesManifestName) +
                            " numbers its runs otherwise than patch 1 to " + std::to_string(steps.size()) +
                            ", which ksandwich never writes",
                        "name the directory `ksandwich submit` or `ksandwich series` wrote");

    // No link on the way from DIR to what a run or series wrote: they write their directories
    // and files as themselves, and a link root's copy of a handed-over directory made root's
    // led to a root-only file whose values the schema's complaint quoted (sixty-seventh attack:
    // the file's own name; sixty-eighth: results/).
    auto refuse_links = [&](const fs::path& own) {
      auto beneath_dir = [&](const fs::path& p) {
        auto rel = p.lexically_relative(dir);
        return !rel.empty() && *rel.begin() != "..";
      };
      auto way = own;  // itself, and each folder up to DIR when it is in DIR
      do {
        if (fs::is_symlink(fs::symlink_status(way)))
          throw UserError(way.string() + " is a symbolic link, not what a run or series writes", "");
        way = way.parent_path();
      } while (way != dir && beneath_dir(way));
    };
    // A step's experiment as the bundle's: not through another user's link or directory, and
    // what it holds never quoted (fifty-ninth attack: their link to a root-only file had its
    // first line printed in the parse error).
    auto read_experiment = [&](const fs::path& file) {
      refuse_links(file);
      if (auto why = untrusted_on_the_way(file, PathRole::kTrustedFile)) throw UserError(*why, "");
      try {
        return experiment::parse_json_strict(read_input_file(file, kMaxInputBytes, "experiment"), file.string());
      } catch (const UserError&) {
        throw UserError(file.string() + " is not valid JSON", "");
      }
    };

    std::vector<report::GatheredRun> runs;
    std::optional<json> previous;  // step k-1's experiment, which step k's must continue
    for (auto& step : steps) {
      report::GatheredRun r;
      r.name = step.name;
      r.out_dir = (dir / "results" / step.name).string();
      r.state = states.count(step.name) ? states[step.name] : "";
      r.patch_index = step.index;
      r.patch_subject = step.subject;
      // What the step's experiment is, and for a series whether it is patch k's: the directory
      // names its steps itself (sixty-ninth attack: an unrelated run shown as "patch -5").
      std::optional<json> given;
      std::string unlike;
      try {
        given = read_experiment(step.experiment_file);
        if (is_series && step.index > 1 && !previous)
          unlike = "the step before it has no experiment to read, so what patch " + std::to_string(step.index) +
                   " adds is not known";
        else if (auto why = is_series ? kernel::series_step_unlike(*given, previous ? &*previous : nullptr, step.patch_file)
                                      : std::nullopt)
          unlike = step.experiment_file.string() + " is not step " + std::to_string(step.index) +
                   " of the series: " + *why;
      } catch (const UserError& e) {
        given.reset();
        unlike = e.what();
      }
      previous = given;
      // A run's bundle is taken for what it measured only when it is that run's own (thirtieth
      // attack: another experiment's bundle, its analysis edited, shown as patch k's cost): in
      // its own directory and no one else's to change, of the very experiment the run was
      // given, and judged again from its raw rows.
      auto bundle = pipeline::bundle_in(r.out_dir);
      if (!fs::exists(bundle)) {
        r.problem = "no bundle in " + r.out_dir;
        if (manifest && !cluster::is_final_state(states[step.name])) r.problem += " (its job has not finished)";
        if (manifest)
          for (auto& j : manifest->jobs)
            if (j.experiment == step.name) r.problem += "; see " + j.log;
      } else {
        try {
          refuse_links(bundle);
          if (auto why = untrusted_on_the_way(bundle, PathRole::kTrustedFile)) throw UserError(*why, "");
          check_bundle_file(bundle);
          r.bundle = pipeline::load_schema_valid_bundle(bundle);  // as `report` reads it
          if (!unlike.empty()) throw UserError(unlike, "");
          // Parsed, or the run is not shown (fiftieth attack: a file that was no JSON parsed to
          // a discarded value, which compared equal to every bundle's experiment).
          if (r.bundle->experiment != *given)
            throw UserError(bundle.string() + " is not a run of " + step.experiment_file.string(), "");
          if (!r.bundle->analysis || evidence::pending_points(*r.bundle) > 0)
            throw UserError(bundle.string() + ": its run has not finished (points still pending)", "");
          r.bundle = pipeline::rejudged(*r.bundle);  // analysis and verdict from its raw rows
          r.exit_code = analysis::exit_code_for(*r.bundle);
        } catch (const UserError& e) {
          r.bundle.reset();
          r.problem = e.what();
        }
      }
      runs.push_back(std::move(r));
    }

    for (auto [format, file] : {std::pair{"text", "report.txt"}, {"markdown", "report.md"}, {"json", "report.json"}})
      write_file_atomic(dir / file, report::render_gathered(runs, is_series, format));
    fmt::print("{}", report::render_gathered(runs, is_series, args->format));
    context.exit_code = report::gathered_exit_code(runs, pending);
  });
}

}  // namespace

void set_submit_commands(CLI::App& app, Context& context) {
  set_submit(app, context);
  set_gather(app, context);
}

}  // namespace ks::cli

#include "pipeline/bisect.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include "analysis/analyze.hpp"
#include "experiment/backends.hpp"
#include "experiment/experiment.hpp"
#include "kernel/kbuild.hpp"
#include "pipeline/bundle_file.hpp"
#include "pipeline/host_changes.hpp"
#include "pipeline/kernels.hpp"
#include "pipeline/run.hpp"
#include "pipeline/validate.hpp"
#include "proc/runner.hpp"
#include "source/source.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/ownership.hpp"
#include "util/hash.hpp"

namespace ks::pipeline {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr const char* kStateFile = "bisect.json";

std::string git(const std::string& repo, std::vector<std::string> args) {
  auto r = proc::run(source::git_command(repo, args, 10min));
  if (!r.ok())
    throw UserError("git " + join(args, " ") + " in " +
                        repo + " failed: " + trim(r.err),
                    "check the experiment's source.path is a git tree holding both commits");
  return r.out;
}

bisect::Commit resolve(const std::string& repo, const std::string& name, const char* option) {
  auto r = proc::run(source::git_command(repo, {"rev-parse", "--verify", "--quiet", name + "^{commit}"}, 1min));
  if (!r.ok())
    throw UserError(std::string(option) + " " + name + ": no such commit in " + repo,
                    "name a commit, tag or branch of the experiment's git source (git -C " + shell_quote(repo) + " log --oneline)");
  auto sha = trim(r.out);
  return {sha, one_line(trim(git(repo, {"log", "-1", std::string("--format=") + source::kGitSubject, sha})))};  // anyone's words
}

std::vector<bisect::Commit> commits_between(const std::string& repo, const bisect::Commit& good,
                                            const bisect::Commit& bad) {
  if (!proc::run(source::git_command(repo, {"merge-base", "--is-ancestor", good.sha, bad.sha}, 1min)).ok())
    throw UserError("--good " + good.sha.substr(0, 12) + " is not an ancestor of --bad " + bad.sha.substr(0, 12),
                    "give a good commit older than the bad one, on its history");
  std::vector<bisect::Commit> out;
  for (auto& line : split(git(repo, {"log", "--reverse", "--first-parent", std::string("--format=%H ") + source::kGitSubject,
                                     good.sha + ".." + bad.sha}), '\n')) {
    // The id ends at the first space: 40 hex digits, or 64 in a SHA-256 repository (thirty-
    // eighth attack: cut at 40, a SHA-256 bisection could never continue).
    const auto space = line.find(' ');  // "%H %s": there is always one
    if (space == std::string::npos || space < 40) continue;
    out.push_back({line.substr(0, space), one_line(trim(line.substr(space + 1)))});  // git pads the subject
  }
  if (out.empty())
    throw UserError("--good and --bad name the same commit", "give a bad commit newer than the good one");
  return out;
}

// Where step INDEX of COMMIT keeps its run: always under OUT/steps, never a path from the file.
fs::path step_dir(const fs::path& out, size_t index, const std::string& commit) {
  return out / "steps" / fmt::format("{:02}-{}", index, commit.substr(0, 12));
}

void save(const fs::path& dir, const bisect::State& s) {
  write_file_atomic(dir / kStateFile, json(s).dump(2) + "\n");
}

constexpr const char* kSameTree = "the same tree as good";

bool same_tree(const std::string& repo, const std::string& a, const std::string& b) {
  return trim(git(repo, {"rev-parse", a + "^{tree}"})) == trim(git(repo, {"rev-parse", b + "^{tree}"}));
}

// The initial step's verdict from the good-to-bad analysis, and the bisection's end when bad
// is not measurably worse.
void judge_initial(bisect::State& s, bisect::Step& initial, const evidence::Analysis& analysis) {
  auto regressed = bisect::regressed_effects(s);
  initial.verdict = regressed.empty() ? "none" : "bad";
  initial.reason = regressed.empty() ? "bad is not measurably worse than good: " + analysis.verdict
                                     : "the good-to-bad effect the steps are judged against";
  if (regressed.empty())
    s.status = analysis.verdict == "INVALID" ? "invalid" : analysis.verdict == "INCONCLUSIVE" ? "inconclusive" : "no-regression";
}

void judge_candidate(const bisect::State& s, bisect::Step& step) {
  auto c = bisect::classify(bisect::regressed_effects(s), step.effects);
  step.verdict = c.verdict;
  step.reason = c.reason;
}

using Edited = std::function<UserError(const std::string&)>;

json without_name(json experiment) {  // what a run measured, whatever it was called
  experiment.erase("name");
  return experiment;
}

// STEP's run as its directory holds it: the bundle there, in the step's own directory (no link
// on the way, trusted), of exactly the experiment the step runs, on kernels built from good and
// the step's commit. Throws EDITED's error saying which of these it is not.
evidence::Bundle run_of(const bisect::State& s, const bisect::Step& step, const json& derived, const std::string& which,
                        const Edited& edited) {
  const auto file = bundle_in(step.dir);
  if (!fs::exists(file)) throw edited(which + " says it ran, and no bundle is in its directory");
  if (fs::is_symlink(step.dir) || fs::is_symlink(fs::path(step.dir).parent_path()))
    throw edited(which + "'s directory is reached through a symbolic link");
  if (auto why = untrusted_on_the_way(file, PathRole::kTrustedFile)) throw edited(which + "'s bundle: " + *why);
  auto bundle = load_bundle(file);
  if (without_name(bundle.experiment) != without_name(derived)) throw edited(which + "'s bundle is of another experiment");
  auto built_from = [&](const std::string& at) {  // what the bundle's kernels were built from
    const json::json_pointer ptr(at);
    return bundle.builds.is_object() && bundle.builds.contains(ptr) && bundle.builds[ptr].is_string()
               ? bundle.builds[ptr].get<std::string>() : std::string();
  };
  if (built_from("/control/source/commit") != s.good.sha || built_from("/patched/source/commit") != s.good.sha ||
      built_from("/patched/commit/sha") != step.commit)
    throw edited(which + "'s bundle measured other kernels than good and " + step.commit.substr(0, 12));
  return bundle;
}

// What bisect.json concludes is derived again, not taken from it (attacks 27 to 29: a file,
// then a file and bundles beside it, that name any commit first bad with nothing measured).
// A decided step's run is run_of's, its analysis recomputed from the bundle's raw rows, and
// the step's verdict is judged from that. A step decided without a run is a skip (which cannot
// make a commit first bad) or a candidate with good's tree, which is good. An unfinished step
// is the last, keeps nothing of what the file says, and its run resumes only when it is
// run_of's (else it starts again). The status follows from the steps.
void rederive(bisect::State& s, const json& base, const Edited& edited) {
  if (s.steps.size() > 1 + s.commits.size() * bisect::kRunsPerCommit)
    throw edited(std::to_string(s.steps.size()) + " steps, more than a bisection of " + std::to_string(s.commits.size()) +
                 " commits makes");
  s.status = "running";
  s.first_bad.clear();
  s.suspects.clear();
  for (size_t i = 0; i < s.steps.size() && s.status == "running"; ++i) {
    auto& step = s.steps[i];
    const auto which = "step " + std::to_string(i);
    if ((i == 0) != (step.role == "initial")) throw edited(which + " is not where its role belongs");
    const auto derived = step_experiment(base, s.repo, s.good.sha, step.commit);
    if (step.verdict.empty()) {
      if (i + 1 != s.steps.size()) throw edited(which + " is unfinished and not the last");
      step.effects.clear(), step.reason.clear(), step.run_exit = -1, step.measured_in.clear();
      if (fs::exists(bundle_in(step.dir))) try {
          run_of(s, step, derived, which, edited);
        } catch (const UserError&) {
          std::error_code ec;
          fs::remove_all(step.dir, ec);
        }
      continue;
    }
    if (step.run_exit < 0) {
      step.effects.clear();
      if (step.role == "initial") throw edited(which + " says " + step.verdict + " with no run");
      if (step.verdict != "skip") {
        if (!same_tree(s.repo, s.good.sha, step.commit)) throw edited(which + " says " + step.verdict + " with no run");
        step.verdict = "good", step.reason = kSameTree;
      }
      continue;
    }
    auto bundle = rejudged(run_of(s, step, derived, which, edited));  // from its raw rows
    step.effects = bisect::effects_of(*bundle.analysis);
    step.run_exit = analysis::exit_code_for(bundle);
    if (step.role == "initial") judge_initial(s, step, *bundle.analysis);
    else judge_candidate(s, step);
  }
}

// The state in DIR, or a new one; refuses a DIR that belongs to another bisection.
bisect::State load_or_start(const BisectOptions& o, bisect::State fresh, const json& base) {
  auto file = o.out_dir / kStateFile;
  if (!fs::exists(file)) {
    if (fs::exists(o.out_dir) && !fs::is_empty(o.out_dir))
      throw UserError(o.out_dir.string() + " is not empty and holds no " + kStateFile,
                      "choose a new --out DIR (or the directory of the bisection to continue)");
    create_output_directory(o.out_dir);
    save(o.out_dir, fresh);
    return fresh;
  }
  auto s = bisect::parse_state(read_input_file(file, kMaxInputBytes, "bisect state"), file.string());
  std::vector<std::string> differ;
  if (s.repo != fresh.repo) differ.push_back("git tree " + one_line(s.repo));
  if (s.good.sha != fresh.good.sha) differ.push_back("good " + s.good.sha.substr(0, 12));
  if (s.bad.sha != fresh.bad.sha) differ.push_back("bad " + s.bad.sha.substr(0, 12));
  if (s.experiment_sha256 != fresh.experiment_sha256) differ.push_back("the experiment " + one_line(s.experiment) + " as it was then");
  std::vector<std::string> ids, fresh_ids;
  for (auto& c : s.commits) ids.push_back(c.sha);
  for (auto& c : fresh.commits) fresh_ids.push_back(c.sha);
  if (ids != fresh_ids) differ.push_back("the commits good..bad");
  if (!differ.empty())
    throw UserError(o.out_dir.string() + " holds another bisection (" + join(differ, ", ") + ")",
                    "rerun it with the same experiment, --good and --bad to continue, or choose a new --out DIR");
  // The file may have been edited: every commit it names is one of good..bad, and a step's
  // directory (removed and rewritten when its run restarts) is the one this command would
  // have chosen. What git says of the commits is taken from git, not from the file.
  auto edited = [&](const std::string& what) {
    return UserError(file.string() + ": " + what, "restore bisect.json as ksandwich wrote it, or start again with a new --out DIR");
  };
  auto in_range = [&](const std::string& sha) { return std::find(ids.begin(), ids.end(), sha) != ids.end(); };
  if (!s.first_bad.empty() && !in_range(s.first_bad)) throw edited("the first bad commit is not one of good..bad");
  for (auto& suspect : s.suspects)
    if (!in_range(suspect)) throw edited("a suspect is not one of good..bad");
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const auto& step = s.steps[i];
    if (!in_range(step.commit)) throw edited("step " + std::to_string(i) + " measures a commit not of good..bad");
    if (fs::path(step.dir) != step_dir(o.out_dir, i, step.commit))
      throw edited("step " + std::to_string(i) + " names the directory " + one_line(step.dir) + ", not " +
                   step_dir(o.out_dir, i, step.commit).string());
  }
  s.good = fresh.good, s.bad = fresh.bad, s.commits = fresh.commits;
  rederive(s, base, edited);
  return s;
}

// A finished run found under --measured: where, when it ended, the kernels it ran.
struct MeasuredRun {
  fs::path dir, bundle;
  std::string updated_at;
  std::string control_key, patched_key;
};

class Driver {
 public:
  Driver(const BisectOptions& o, bisect::State& s, json base) : o_(o), s_(s), base_(std::move(base)) {}

  // Measures COMMIT against good as step STEP (already in the state, possibly half done).
  std::optional<evidence::Analysis> measure(bisect::Step& step) {
    auto started = Clock::now();
    if (same_tree(s_.repo, s_.good.sha, step.commit)) {  // never the initial step's (prepare)
      step.verdict = "good";
      step.reason = kSameTree;
      return std::nullopt;
    }
    auto derived = step_experiment(base_, s_.repo, s_.good.sha, step.commit);
    auto exp = experiment::parse(derived);
    auto build_started = Clock::now();
    RunKernels kernels;
    try {
      if (experiment::backend_rules(exp.backend).boots_kernels) kernels = build_kernels(exp, o_.repo_dir, o_.experiment_file.parent_path());
    } catch (const UserError& err) {
      if (step.role == "initial") throw;
      step.verdict = "skip";
      auto lines = split(err.what(), '\n');
      step.reason = "build failed: " + (lines.empty() ? std::string("?") : lines.front());
      step.seconds = seconds_since(started);
      return std::nullopt;
    }
    step.build_seconds = seconds_since(build_started);
    if (auto analysis = take_measured(step, derived, kernels.builds)) {
      step.seconds = seconds_since(started);
      return analysis;
    }

    fs::path dir = step.dir;
    RunOptions ro;
    ro.out_dir = dir;
    ro.resume = fs::exists(bundle_in(dir));
    if (!ro.resume) {
      std::error_code ec;
      fs::remove_all(dir, ec);  // a run killed before its first bundle: nothing measured
      ro.experiment_file = o_.experiment_file;
      ro.experiment = derived;
    }
    ro.print_report = false;
    ro.tool = o_.tool;
    ro.agent = o_.agent;
    ro.repo_dir = o_.repo_dir;
    step.run_exit = run(ro);
    auto bundle = load_bundle(dir / "bundle.json");
    step.seconds = seconds_since(started);
    if (!bundle.analysis) throw SystemError("bisect", "the run in " + dir.string() + " left no analysis");
    step.effects = bisect::effects_of(*bundle.analysis);
    return bundle.analysis;
  }

 private:
  // The newest finished run under --measured of exactly DERIVED with the kernels BUILDS
  // names (a commit's first step only: a second run is measured here), copied into the
  // step's directory in place of whatever a cut-short attempt left there; nullopt when none.
  std::optional<evidence::Analysis> take_measured(bisect::Step& step, const json& derived, const json& builds) {
    if (o_.measured.empty()) return std::nullopt;
    for (auto& t : s_.steps)
      if (&t != &step && t.commit == step.commit) return std::nullopt;
    if (!measured_) measured_ = index_measured(o_.measured);
    auto key = [&](const char* arm) { return builds.contains(arm) ? builds[arm].value("key", "") : ""; };
    const MeasuredRun* best = nullptr;
    auto [from, to] = measured_->equal_range(without_name(derived).dump());
    for (auto it = from; it != to; ++it)
      if (it->second.control_key == key("control") && it->second.patched_key == key("patched") &&
          (!best || it->second.updated_at > best->updated_at))
        best = &it->second;
    if (!best) return std::nullopt;
    // Copied beside the step's directory, then renamed into place: a copy cut short is
    // never taken for a run. Links are not followed (a run directory holds none it needs), and
    // under sudo the run is read as the user who ran it (fiftieth attack: root copied by path
    // from a tree of theirs, where a link swapped in would have it copy what they cannot read).
    fs::path dir = step.dir, part = step.dir + ".part";
    std::error_code ec;
    fs::remove_all(part, ec);
    fs::create_directories(dir.parent_path());
    try {
      // Not its journal: what another run set up is that run's to undo.
      copy_tree_as_invoking_user(best->dir, part, kMaxInputBytes, {journal_file({})});
    } catch (const UserError& err) {
      fs::remove_all(part, ec);
      fmt::print(stderr, "bisect: {}\n", one_line("not taking " + best->dir.string() + " (" + err.what() + "); measuring here"));
      return std::nullopt;
    }
    fs::remove_all(dir, ec);
    fs::rename(part, dir);
    auto bundle = load_bundle(dir / best->bundle.filename());
    if (!bundle.analysis) {  // changed since it was indexed
      fs::remove_all(dir, ec);
      return std::nullopt;
    }
    bundle = rejudged(bundle);  // from its raw rows, as a resumed step's
    step.run_exit = analysis::exit_code_for(bundle);
    step.effects = bisect::effects_of(*bundle.analysis);
    step.measured_in = best->dir.string();
    return bundle.analysis;
  }

  // Every finished run (its bundle written for the last time: the run's timings are in it)
  // at most three levels under DIRS, by its experiment without the name: DIR/results/<name>/
  // of a submit, DIR/steps/NN-<sha>/ of another bisection. Links are not followed.
  static std::multimap<std::string, MeasuredRun> index_measured(const std::vector<fs::path>& dirs) {
    std::multimap<std::string, MeasuredRun> runs;
    // Under sudo, listed and read as the user: root's own runs in a tree they name are not
    // theirs to take, nor to learn of (sixty-eighth attack, from the code: a root-only run
    // directory under --measured was indexed, then named when its copy was refused).
    AsInvokingUser as;
    for (auto& dir : dirs) {
      std::error_code ec;
      for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        if (it.depth() >= 3) it.disable_recursion_pending();
        const auto& path = it->path();
        if (it->is_symlink(ec) || !it->is_regular_file(ec) || path != bundle_in(path.parent_path())) continue;
        if (untrusted_on_the_way(path, PathRole::kTrustedFile)) continue;  // for root: only runs no one else forged
        try {
          auto bundle = load_bundle(path);
          if (!bundle.analysis || !bundle.extra.is_object() || !bundle.extra.contains("timings")) continue;
          auto key = [&](const char* arm) {
            return bundle.builds.contains(arm) ? bundle.builds[arm].value("key", "") : std::string();
          };
          runs.emplace(without_name(bundle.experiment).dump(),
                       MeasuredRun{path.parent_path(), path, bundle.updated_at, key("control"), key("patched")});
        } catch (const std::exception&) {
          // not a bundle this ksandwich reads: not a measured step
        }
      }
    }
    return runs;
  }

  static double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }
  const BisectOptions& o_;
  bisect::State& s_;
  json base_;  // the experiment with every file it names absolute
  std::optional<std::multimap<std::string, MeasuredRun>> measured_;
};

// The step for COMMIT: the unfinished last one when it is that commit, else a new one.
bisect::Step& open_step(bisect::State& s, const fs::path& out, const std::string& role, const std::string& commit) {
  if (!s.steps.empty() && s.steps.back().verdict.empty() && s.steps.back().commit == commit) return s.steps.back();
  bisect::Step step;
  step.role = role;
  step.commit = commit;
  step.dir = step_dir(out, s.steps.size(), commit).string();
  s.steps.push_back(step);
  save(out, s);
  return s.steps.back();
}

void tell(const bisect::State& s, const bisect::Step& step) {
  std::string figures;
  for (auto& e : step.effects) figures += fmt::format(" {} {} {}", e.workload, bisect::percent(e.ratio), e.verdict);
  // The reason and where it was measured may come from bisect.json: one line.
  fmt::print(stderr, "bisect: {}\n",
             one_line(fmt::format("{} {}: {}{} ({}; {})", step.role, bisect::commit_reference(bisect::find_commit(s, step.commit)),
                                  step.verdict, figures, step.reason,
                                  step.measured_in.empty() ? fmt::format("{:.0f} s", step.seconds) : "measured in " + step.measured_in)));
}

int finish(const BisectOptions& o, bisect::State& s) {
  save(o.out_dir, s);
  if (s.status == "found" || s.status == "ambiguous") {
    auto reply = bisect::reply_text(s, o.reported_by);
    write_file_atomic(o.out_dir / "reply.txt", reply);
    if (s.status == "found")
      fmt::print("first bad commit: {}\n", bisect::commit_reference(bisect::find_commit(s, s.first_bad)));
    else
      fmt::print("first bad commit: one of {} (skipped commits in the way)\n", s.suspects.size());
    fmt::print("steps and bundles: {}\nreply: {}\n\n{}", (o.out_dir / kStateFile).string(),
               (o.out_dir / "reply.txt").string(), reply);
    return s.status == "found" ? kExitRegression : kExitInconclusive;
  }
  if (s.steps.empty())  // a state file that says it finished without a step
    throw UserError((o.out_dir / kStateFile).string() + " records no step, yet says " + one_line(s.status),
                    "--out a new directory to bisect again");
  const auto& first = s.steps.front();
  fmt::print("bisect: bad vs good shows no regression to bisect ({}); bundle: {}\n", s.status, one_line(first.dir));
  if (s.status == "no-regression") return kExitOk;
  return s.status == "invalid" ? kExitPointFailed : kExitInconclusive;
}

}  // namespace

json step_experiment(const json& experiment, const std::string& repo, const std::string& good,
                     const std::string& candidate) {
  json e = experiment;
  e["source"] = {{"kind", "git"}, {"path", repo}, {"commit", good}};
  e["scheme"] = "confirm";
  e.erase("order");
  json control = e.contains("arms") && e["arms"].contains("control") ? e["arms"]["control"] : json::object();
  control.erase("patches");
  json patched = control;
  patched["commit"] = candidate;
  e["arms"] = {{"control", control}, {"patched", patched}};
  return e;
}

namespace {

struct Prepared {
  experiment::Experiment experiment;
  json base;  // its JSON with every file absolute
  bisect::State fresh;
};

Prepared prepare(const BisectOptions& o) {
  require_trusted_input(o.experiment_file, "experiment");
  auto text = read_input_file(o.experiment_file, kMaxInputBytes, "experiment file");
  auto e = experiment::parse_text(text, o.experiment_file.string());
  if (e.source.kind != "git")
    throw UserError("bisect needs a git source: " + o.experiment_file.string() + " has source.kind `" +
                        e.source.kind + "`",
                    "set \"source\": {\"kind\": \"git\", \"path\": \"/path/to/linux\", \"commit\": \"HEAD\"} in the experiment "
                    "(bisect builds --good as the control arm)");
  if (!experiment::backend_rules(e.backend).boots_kernels)
    throw UserError("bisect builds a kernel per commit: the " + e.backend + " backend runs only the kernel booted now",
                    "use \"backend\": \"qemu\" in the experiment");
  experiment::require_one_run_per_process(e, "bisect");
  auto base = kernel::absolute_experiment(e, o.experiment_file.parent_path(), o.repo_dir);
  auto repo = kernel::request_for_arm(e, "control", o.repo_dir, o.experiment_file.parent_path()).source.path;
  if (!fs::is_directory(status_as_invoking_user(repo)))  // as the sudo user sees it (sixty-seventh attack)
    throw UserError("git source " + repo + " does not exist", "set source.path to a local kernel git tree");

  bisect::State fresh;
  fresh.experiment = o.experiment_file.string();
  fresh.experiment_sha256 = sha256_hex(text);
  fresh.repo = repo;
  fresh.good = resolve(repo, o.good, "--good");
  fresh.bad = resolve(repo, o.bad, "--bad");
  fresh.commits = commits_between(repo, fresh.good, fresh.bad);
  // Refused before a state or directory is made (an earlier check, at the first step, left them).
  if (same_tree(repo, fresh.good.sha, fresh.bad.sha))
    throw UserError("--good and --bad have the same tree: nothing to bisect", "give a bad commit that changes the kernel");
  return {std::move(e), std::move(base), std::move(fresh)};
}

}  // namespace

int write_bisect_experiments(const BisectOptions& o, const fs::path& dir) {
  auto p = prepare(o);
  if (fs::exists(dir) && (!fs::is_directory(dir) || !fs::is_empty(dir)))
    throw UserError("--write-experiments " + dir.string() + " is not a new or empty directory",
                    "give a new directory: one experiment file per commit is written there");
  fs::create_directories(dir);
  std::vector<std::string> files;
  for (auto& c : p.fresh.commits) {
    auto e = step_experiment(p.base, p.fresh.repo, p.fresh.good.sha, c.sha);
    e["name"] = p.experiment.name + "-" + c.sha.substr(0, 12);
    experiment::parse(e);  // what submit and run will read must be an experiment
    files.push_back((dir / (e["name"].get<std::string>() + ".json")).string());
    write_file_atomic(files.back(), e.dump(2) + "\n");
  }
  fmt::print("{} experiments in {}, each a commit of {}..{} against good (bad last)\n", files.size(),
             dir.string(), p.fresh.good.sha.substr(0, 12), p.fresh.bad.sha.substr(0, 12));
  fmt::print("fan them out:   ksandwich submit --slurm --dir SUBMIT_DIR {}/*.json\n", shell_quote(dir.string()));
  fmt::print("wait for them:  ksandwich gather SUBMIT_DIR\n");
  fmt::print("then bisect:    ksandwich bisect {} --good {} --bad {} --measured SUBMIT_DIR\n",
             shell_quote(o.experiment_file.string()), shell_quote(o.good), shell_quote(o.bad));
  return kExitOk;
}

int bisect(const BisectOptions& o) {
  auto p = prepare(o);
  auto fresh = p.fresh;
  auto s = load_or_start(o, fresh, p.base);
  if (s.status != "running") return finish(o, s);

  Driver driver(o, s, p.base);
  if (s.steps.empty() || s.steps.front().verdict.empty()) {
    auto& step = open_step(s, o.out_dir, "initial", s.bad.sha);
    fmt::print(stderr, "bisect: {} commits; measuring bad {} against good {} first\n", s.commits.size(),
               s.bad.sha.substr(0, 12), s.good.sha.substr(0, 12));
    judge_initial(s, step, *driver.measure(step));
    tell(s, step);
    if (s.status != "running") return finish(o, s);
    save(o.out_dir, s);
  }

  for (;;) {
    auto next = bisect::next_step(s);
    if (!next.candidate) {
      if (next.suspects.empty()) {
        s.status = "found";
        s.first_bad = s.commits[next.first_bad].sha;
      } else {
        s.status = "ambiguous";
        for (auto i : next.suspects) s.suspects.push_back(s.commits[i].sha);
      }
      return finish(o, s);
    }
    const auto& commit = s.commits[*next.candidate];
    bool again = std::any_of(s.steps.begin(), s.steps.end(),
                             [&](const bisect::Step& t) { return t.commit == commit.sha && !t.verdict.empty(); });
    auto& step = open_step(s, o.out_dir, "candidate", commit.sha);
    fmt::print(stderr, "bisect: measuring {} against good{}\n", bisect::commit_reference(commit),
               again ? " again (its run was skipped)" : "");
    if (driver.measure(step)) judge_candidate(s, step);  // measured (else decided without a run: same tree, failed build)
    tell(s, step);
    save(o.out_dir, s);
  }
}

}  // namespace ks::pipeline

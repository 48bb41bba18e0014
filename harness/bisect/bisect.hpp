#pragma once
// Performance bisection, the pure half: the state kept in DIR/bisect.json, how one step's
// analysis becomes good / bad / skip, which commit to measure next, and the reply for the
// list. No I/O: the driver (pipeline/bisect.hpp) runs the steps and stores the state.
//
// A step compares a candidate against the good kernel with the confirm scheme. It is
//   bad  when a workload that regressed from good to bad shows a material REGRESSION whose
//        estimate is at least half the good-to-bad effect (on the log scale, worse
//        direction), or is INCONCLUSIVE (stopped at its cap) with its whole interval beyond
//        half the effect;
//   good when every such workload is NO_CHANGE or IMPROVEMENT, or its interval excludes
//        half the effect (whatever it shows is clearly smaller than the regression);
//   skip (git bisect's 125) otherwise: INVALID, a build that failed, or inconclusive at
//        the run's cap.
// A commit skipped after a finished run (noise, not a broken build) is measured once more,
// as a new step, before the bisection settles for several suspects: on a busy host one
// short run in a handful loses blocks to a slow stretch, and the next run is independent.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "evidence/bundle.hpp"

namespace ks::bisect {

struct Commit {
  std::string sha;      // full commit id
  std::string subject;  // its first line
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Commit, sha, subject)

// One workload's result in a step (candidate vs good): the ratio candidate / good and its
// interval as the run's analysis decided it.
struct Effect {
  std::string workload;
  std::string metric;
  bool higher_is_better = false;
  std::string verdict;  // the workload's verdict in that run
  double ratio = 1, low = 1, high = 1, level = 0.95;
  bool has_interval = false;
  int blocks = 0;       // whole blocks the decision used
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Effect, workload, metric, higher_is_better, verdict,
                                                ratio, low, high, level, has_interval, blocks)

// The words a state holds, the tables its reader checks it against.
inline constexpr const char* kRoles[] = {"initial", "candidate"};
inline constexpr const char* kStepVerdicts[] = {"good", "bad", "skip", "none"};  // none: bad is not worse
inline constexpr const char* kStatuses[] = {"running", "found", "ambiguous", "no-regression", "invalid", "inconclusive"};

struct Step {
  std::string role;     // initial (bad vs good) | candidate
  std::string commit;   // full id of the kernel compared against good
  std::string dir;      // its run directory (bundle.json there); empty when nothing ran
  std::string verdict;  // one of kStepVerdicts; empty while it runs
  std::string reason;   // why that verdict, one line
  int run_exit = -1;    // the run's exit code; -1 when no run finished
  std::vector<Effect> effects;
  double seconds = 0;   // build + run, wall clock
  double build_seconds = 0;
  std::string measured_in;  // the run directory it was copied from (--measured), else empty
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Step, role, commit, dir, verdict, reason, run_exit,
                                                effects, seconds, build_seconds, measured_in)

// DIR/bisect.json.
struct State {
  int version = 1;
  std::string experiment;         // the experiment file bisected
  std::string experiment_sha256;  // its bytes: a rerun with another experiment is refused
  std::string repo;               // the git tree
  Commit good, bad;
  std::vector<Commit> commits;    // good..bad, oldest first, bad last (first-parent order)
  std::vector<Step> steps;        // the initial comparison first
  std::string status = "running";  // one of kStatuses
  std::string first_bad;              // found: the first bad commit
  std::vector<std::string> suspects;  // ambiguous: skipped commits and the first known bad
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(State, version, experiment, experiment_sha256, repo,
                                                good, bad, commits, steps, status, first_bad, suspects)

// Throws UserError naming what is wrong when TEXT is not a bisect state, or holds a word
// (status, role, verdict, commit id, workload) a bisection does not write.
State parse_state(const std::string& text, const std::string& origin);

// The workloads of a run's analysis as effects.
std::vector<Effect> effects_of(const evidence::Analysis& analysis);

// ln(ratio) turned so that > 0 is worse (slower, or fewer ops per second).
double worse_log(double ratio, bool higher_is_better);

struct Classification {
  std::string verdict;  // good | bad | skip
  std::string reason;
};

// REGRESSED: the workloads that regressed from good to bad (the initial step's effects
// with verdict REGRESSION). STEP: the candidate's effects.
Classification classify(const std::vector<Effect>& regressed, const std::vector<Effect>& step);

// The regressed effects of the initial step (empty when it showed no regression).
std::vector<Effect> regressed_effects(const State& state);

// How many finished runs a commit gets before its skip stands.
inline constexpr int kRunsPerCommit = 2;

struct Next {
  std::optional<size_t> candidate;    // index into commits to measure next
  size_t first_bad = 0;               // when no candidate is left: the first bad commit
  std::vector<size_t> suspects;       // ... or, with skips in the way, every commit it may be
};

// The next commit to measure: the untested commit nearest the middle of what is still open
// (after the last good, before the first bad), so each step halves it; when none is left,
// a commit in there skipped after a finished run fewer than kRunsPerCommit times. A
// commit's latest verdict is the one that counts.
Next next_step(const State& state);

// "+68.2%" for a ratio 1.682.
std::string percent(double ratio);

// The 12-character id and subject as kernel trailers write a commit: 0123456789ab ("subject").
std::string commit_reference(const Commit& c);

// The reply for the list once the bisection ended (status found or ambiguous): the first
// bad commit, the figures, every step with its bundle, and the trailers a fix carries.
// REPORTED_BY: "Name <email>", or empty (then no Reported-by: line).
std::string reply_text(const State& state, const std::string& reported_by);

// The commit of STATE with id SHA (a copy with the id alone when it is not in the list).
Commit find_commit(const State& state, const std::string& sha);

}  // namespace ks::bisect

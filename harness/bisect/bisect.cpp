#include "bisect/bisect.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "experiment/experiment.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::bisect {

using nlohmann::json;

namespace {

bool is_commit_id(const std::string& s) {  // SHA-1 or SHA-256, as git prints them
  return (s.size() == 40 || s.size() == 64) &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

template <size_t N>
bool one_of(const std::string& word, const char* const (&words)[N]) {
  return std::find(std::begin(words), std::end(words), word) != std::end(words);
}

// The words of a state the reply and the progress lines are made of are what a bisection
// writes (twenty-sixth attack: an effect's workload "x\nSigned-off-by: ..." in the reply).
void check_words(const State& s, const std::string& origin) {
  auto refuse = [&](const std::string& what, const std::string& word) {
    throw UserError(origin + " is not a bisect state as ksandwich writes it: " + what + " \"" +
                        one_line(word.substr(0, 80)) + "\"",
                    "restore bisect.json as ksandwich wrote it, or bisect into a new --out");
  };
  if (!one_of(s.status, kStatuses)) refuse("the status", s.status);
  for (auto* c : {&s.good, &s.bad})
    if (!is_commit_id(c->sha)) refuse("the commit", c->sha);
  for (auto& c : s.commits)
    if (!is_commit_id(c.sha)) refuse("the commit", c.sha);
  if (!s.first_bad.empty() && !is_commit_id(s.first_bad)) refuse("the first bad commit", s.first_bad);
  for (auto& c : s.suspects)
    if (!is_commit_id(c)) refuse("the suspect", c);
  for (auto& step : s.steps) {
    if (!one_of(step.role, kRoles)) refuse("a step's role", step.role);
    if (!step.verdict.empty() && !one_of(step.verdict, kStepVerdicts)) refuse("a step's verdict", step.verdict);
    if (!is_commit_id(step.commit)) refuse("a step's commit", step.commit);
    for (auto& e : step.effects) {
      if (!experiment::is_plain_name(e.workload)) refuse("an effect's workload", e.workload);
      if (!one_of(e.verdict, evidence::kVerdicts)) refuse("an effect's verdict", e.verdict);
    }
  }
}

}  // namespace

State parse_state(const std::string& text, const std::string& origin) {
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("commits") || !j.contains("steps"))
    throw UserError(origin + " is not a bisect state (bisect.json)",
                    "give --out a new directory, or the directory of an earlier `ksandwich bisect`");
  try {
    auto s = j.get<State>();
    if (s.version != 1)
      throw UserError(origin + " has state version " + std::to_string(s.version) + "; this ksandwich writes 1",
                      "resume it with the ksandwich that started it, or bisect into a new --out");
    check_words(s, origin);
    return s;
  } catch (const json::exception& e) {
    throw UserError(origin + " is not a bisect state: " + e.what(),
                    "give --out a new directory, or the directory of an earlier `ksandwich bisect`");
  }
}

std::vector<Effect> effects_of(const evidence::Analysis& analysis) {
  std::vector<Effect> out;
  for (auto& w : analysis.workloads) {
    Effect e;
    e.workload = w.workload;
    e.metric = w.metric;
    e.higher_is_better = w.higher_is_better;
    e.verdict = w.verdict;
    e.blocks = static_cast<int>(w.block_ratios.size());
    if (w.ratio_ci) {
      e.ratio = w.ratio_ci->estimate;
      e.low = w.ratio_ci->low;
      e.high = w.ratio_ci->high;
      e.level = w.ratio_ci->level;
      e.has_interval = true;
    } else {
      e.ratio = e.low = e.high = 1 + w.delta_pct / 100;
    }
    out.push_back(e);
  }
  return out;
}

double worse_log(double ratio, bool higher_is_better) {
  double l = std::log(ratio);
  return higher_is_better ? -l : l;
}

Classification classify(const std::vector<Effect>& regressed, const std::vector<Effect>& step) {
  if (regressed.empty()) return {"skip", "no workload regressed from good to bad"};
  bool all_good = true;
  std::vector<std::string> open;
  for (auto& r : regressed) {
    double half = worse_log(r.ratio, r.higher_is_better) / 2;
    auto it = std::find_if(step.begin(), step.end(), [&](const Effect& e) { return e.workload == r.workload; });
    if (it == step.end()) {
      all_good = false;
      open.push_back(r.workload + ": no result");
      continue;
    }
    const Effect& e = *it;
    double worse = worse_log(e.ratio, e.higher_is_better);
    // The better end of the interval: at or beyond half the effect, the regression is there.
    double better_end = worse_log(e.higher_is_better ? e.high : e.low, e.higher_is_better);
    if ((e.verdict == "REGRESSION" && worse >= half) ||
        (e.verdict == "INCONCLUSIVE" && e.has_interval && better_end >= half))
      return {"bad", fmt::format("{} {} vs good ({}): at least half the good-to-bad {}", r.workload,
                                 percent(e.ratio), e.verdict, percent(r.ratio))};
    // The worse end of the interval: below half the effect, the regression is not there.
    double worse_end = worse_log(e.higher_is_better ? e.low : e.high, e.higher_is_better);
    bool good = e.verdict == "NO_CHANGE" || e.verdict == "IMPROVEMENT" ||
                (e.verdict != "INVALID" && e.has_interval && worse_end < half);
    if (!good) {
      all_good = false;
      open.push_back(fmt::format("{} {} {}", r.workload, e.verdict, percent(e.ratio)));
    }
  }
  if (all_good) return {"good", "equivalent to good (or clearly below half the good-to-bad effect)"};
  std::string why;
  for (auto& o : open) why += (why.empty() ? "" : "; ") + o;
  return {"skip", "neither bad nor good: " + why};
}

std::vector<Effect> regressed_effects(const State& state) {
  std::vector<Effect> out;
  if (state.steps.empty() || state.steps.front().role != "initial") return out;
  for (auto& e : state.steps.front().effects)
    if (e.verdict == "REGRESSION") out.push_back(e);
  return out;
}

Next next_step(const State& state) {
  std::map<std::string, std::string> verdict;  // each commit's latest
  std::map<std::string, int> runs_skipped;     // finished runs that ended in a skip
  std::map<std::string, bool> unrunnable;      // skipped without a run (its build failed)
  for (auto& s : state.steps) {
    if (s.role != "candidate" || s.verdict.empty()) continue;  // still running
    verdict[s.commit] = s.verdict;
    if (s.verdict == "skip") (s.run_exit >= 0 ? runs_skipped[s.commit]++ : unrunnable[s.commit] = true);
  }
  const size_t n = state.commits.size();
  // Open: [lo, hi) before the first known bad commit (the last one, bad, is known).
  size_t lo = 0, hi = n ? n - 1 : 0;
  for (size_t i = 0; i + 1 < n; ++i) {
    auto it = verdict.find(state.commits[i].sha);
    if (it == verdict.end()) continue;
    if (it->second == "good") lo = std::max(lo, i + 1);
    if (it->second == "bad") hi = std::min(hi, i);
  }
  Next next;
  next.first_bad = hi;
  const double middle = (static_cast<double>(lo) + static_cast<double>(hi) - 1) / 2;
  auto nearer = [&](size_t i, const std::optional<size_t>& best) {
    return !best || std::abs(static_cast<double>(i) - middle) < std::abs(static_cast<double>(*best) - middle);
  };
  std::optional<size_t> untested, rerun;
  for (size_t i = lo; i < hi; ++i) {
    const auto& sha = state.commits[i].sha;
    if (!verdict.count(sha)) {
      if (nearer(i, untested)) untested = i;
      continue;
    }
    next.suspects.push_back(i);  // measured here and still open: only a skip can be
    if (!unrunnable[sha] && runs_skipped[sha] < kRunsPerCommit && nearer(i, rerun)) rerun = i;
  }
  next.candidate = untested ? untested : rerun;
  if (next.candidate || next.suspects.empty()) next.suspects.clear();
  else next.suspects.push_back(hi);
  return next;
}

std::string percent(double ratio) { return fmt::format("{:+.1f}%", 100 * (ratio - 1)); }

std::string commit_reference(const Commit& c) {
  // A subject is anyone's words (twenty-fifth attack: "\r\e[2Kfirst bad commit: ..."): one line.
  return one_line(fmt::format("{} (\"{}\")", c.sha.substr(0, 12), c.subject));
}

Commit find_commit(const State& state, const std::string& sha) {
  for (auto& c : state.commits)
    if (c.sha == sha) return c;
  if (state.good.sha == sha) return state.good;
  return {sha, ""};
}

namespace {

std::string effect_line(const Effect& e) {
  std::string line = fmt::format("{} {}", e.workload, percent(e.ratio));
  if (e.has_interval)
    line += fmt::format(" ({:.0f}% CI {} .. {})", 100 * e.level, percent(e.low), percent(e.high));
  line += fmt::format(", {} blocks, {}", e.blocks, e.verdict);
  return one_line(line);
}

}  // namespace

std::string reply_text(const State& state, const std::string& reported_by) {
  std::string out;
  auto regressed = regressed_effects(state);
  const bool found = state.status == "found";
  auto first = find_commit(state, state.first_bad);

  out += "Hi,\n\n";
  out += fmt::format("Bisecting a performance regression ({}) between\n\n", one_line(state.experiment));
  out += "  good: " + commit_reference(state.good) + "\n";
  out += "  bad:  " + commit_reference(state.bad) + "\n\n";
  if (found) {
    out += "the first bad commit is\n\n  " + commit_reference(first) + "\n\n";
  } else {
    out += "left these commits, any of which may be the first bad one (the others in\n"
           "between could not be built or measured decisively):\n\n";
    for (auto& s : state.suspects) out += "  " + commit_reference(find_commit(state, s)) + "\n";
    out += "\n";
  }
  out += "Good to bad, measured first (bad vs good):\n";
  for (auto& e : regressed) out += "  " + effect_line(e) + "\n";
  const Step* at_first = nullptr;  // its latest step: the one that made it bad
  for (auto& s : state.steps)
    if (found && s.role == "candidate" && s.commit == state.first_bad) at_first = &s;
  if (at_first) {
    out += fmt::format("At {} (vs good):\n", first.sha.substr(0, 12));
    for (auto& e : at_first->effects) out += "  " + effect_line(e) + "\n";
  }
  out += "\nEach step was a confirm run (paired blocks, stopped sequentially) of the\n"
         "candidate against the good kernel: bad at a regression of at least half the\n"
         "good-to-bad effect, good when clearly below that, skipped otherwise (a commit\n"
         "skipped after a finished run was measured once more).\n\n";
  int n = 0;
  for (auto& s : state.steps) {
    std::string figures;
    for (auto& e : s.effects)
      if (std::any_of(regressed.begin(), regressed.end(), [&](const Effect& r) { return r.workload == e.workload; }))
        figures += fmt::format(" {} {}", e.workload, percent(e.ratio));
    out += one_line(fmt::format("  {:>2} {} {:<7}{}", n++, s.commit.substr(0, 12),
                                s.role == "initial" ? "(bad)" : s.verdict, figures)) + "\n";
    if (!s.dir.empty()) out += "     " + one_line(s.dir) + "/bundle.json.gz\n";
    if (s.role == "candidate" && s.verdict == "skip") out += "     " + one_line(s.reason) + "\n";
  }
  if (found) {
    out += "\n#regzbot introduced: " + first.sha.substr(0, 12) + "\n";
    out += "\nA fix would carry:\n\n";
    out += "Fixes: " + commit_reference(first) + "\n";
    if (!reported_by.empty()) out += "Reported-by: " + reported_by + "\n";
  }
  return out;
}

}  // namespace ks::bisect

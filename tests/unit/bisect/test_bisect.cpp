// Performance bisection, the pure half: how a step is judged against the good-to-bad
// effect, which commit comes next (and that the search always ends on the first bad commit
// in about log2(n) steps), the state file, and the reply naming the commit.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <string>

#include "bisect/bisect.hpp"
#include "util/error.hpp"

using namespace ks;
using bisect::Effect;

namespace {

Effect effect(const std::string& verdict, double ratio, double low, double high,
              const std::string& workload = "clone", bool higher_is_better = false) {
  Effect e;
  e.workload = workload;
  e.metric = higher_is_better ? "iops" : "ns_per_op";
  e.higher_is_better = higher_is_better;
  e.verdict = verdict;
  e.ratio = ratio;
  e.low = low;
  e.high = high;
  e.has_interval = true;
  e.blocks = 4;
  return e;
}

std::string sha(int i) {
  std::string s = std::to_string(i);
  return std::string(40 - s.size(), 'a') + s;
}

// N commits after good, bad last; no step yet but the initial one (bad vs good, +70%).
bisect::State state_of(int n) {
  bisect::State s;
  s.good = {sha(0), "good subject"};
  for (int i = 1; i <= n; ++i) s.commits.push_back({sha(i), "subject " + std::to_string(i)});
  s.bad = s.commits.back();
  bisect::Step initial;
  initial.role = "initial";
  initial.commit = s.bad.sha;
  initial.verdict = "bad";
  initial.dir = "/out/steps/00-" + s.bad.sha.substr(0, 12);
  initial.effects = {effect("REGRESSION", 1.70, 1.60, 1.80)};
  s.steps.push_back(initial);
  return s;
}

// RUN_EXIT -1: decided without a run (a build that failed); 4: a run that ended inconclusive.
void add_step(bisect::State& s, size_t index, const std::string& verdict, int run_exit = -1) {
  bisect::Step step;
  step.run_exit = run_exit;
  step.role = "candidate";
  step.commit = s.commits[index].sha;
  step.verdict = verdict;
  step.dir = "/out/steps/" + std::to_string(s.steps.size());
  s.steps.push_back(step);
}

}  // namespace

TEST_CASE("bisect: a step is bad at a material regression of at least half the good-to-bad effect") {
  std::vector<Effect> regressed = {effect("REGRESSION", 1.70, 1.60, 1.80)};
  // Half the effect on the log scale: sqrt(1.7) = 1.304.
  CHECK(bisect::classify(regressed, {effect("REGRESSION", 1.68, 1.55, 1.80)}).verdict == "bad");
  CHECK(bisect::classify(regressed, {effect("REGRESSION", 1.31, 1.20, 1.42)}).verdict == "bad");
  // Material, but smaller than half, and the interval says so: not this regression.
  CHECK(bisect::classify(regressed, {effect("REGRESSION", 1.10, 1.05, 1.15)}).verdict == "good");
  // Smaller than half, but the interval reaches past it: cannot tell.
  CHECK(bisect::classify(regressed, {effect("REGRESSION", 1.25, 1.05, 1.45)}).verdict == "skip");
  // A run stopped at its cap undecided whose whole interval lies beyond half the effect.
  auto capped = bisect::classify(regressed, {effect("INCONCLUSIVE", 1.6, 1.35, 1.9)});
  CHECK(capped.verdict == "bad");
  CHECK(capped.reason.find("INCONCLUSIVE") != std::string::npos);
  CHECK(bisect::classify(regressed, {effect("INCONCLUSIVE", 1.6, 1.25, 1.9)}).verdict == "skip");
  CHECK(bisect::classify(regressed, {effect("INVALID", 1.6, 1.35, 1.9)}).verdict == "skip");
  // NO_CHANGE is equivalent whatever its interval: good.
  CHECK(bisect::classify(regressed, {effect("NO_CHANGE", 1.35, 1.31, 1.39)}).verdict == "good");
}

TEST_CASE("bisect: a step is good when equivalent, skipped when inconclusive or invalid") {
  std::vector<Effect> regressed = {effect("REGRESSION", 1.70, 1.60, 1.80)};
  CHECK(bisect::classify(regressed, {effect("NO_CHANGE", 1.002, 0.99, 1.01)}).verdict == "good");
  CHECK(bisect::classify(regressed, {effect("IMPROVEMENT", 0.90, 0.85, 0.95)}).verdict == "good");
  auto wide = bisect::classify(regressed, {effect("INCONCLUSIVE", 1.2, 0.9, 1.6)});
  CHECK(wide.verdict == "skip");
  CHECK(wide.reason.find("INCONCLUSIVE") != std::string::npos);
  CHECK(bisect::classify(regressed, {effect("INVALID", 1.0, 0.99, 1.01)}).verdict == "skip");
  // The workload that regressed has no result in the step.
  CHECK(bisect::classify(regressed, {effect("NO_CHANGE", 1.0, 0.99, 1.01, "dedupe")}).verdict == "skip");
  CHECK(bisect::classify({}, {effect("NO_CHANGE", 1.0, 0.99, 1.01)}).verdict == "skip");
}

TEST_CASE("bisect: a metric where higher is better regresses downwards") {
  std::vector<Effect> regressed = {effect("REGRESSION", 0.60, 0.55, 0.65, "dio", true)};
  CHECK(bisect::classify(regressed, {effect("REGRESSION", 0.62, 0.58, 0.66, "dio", true)}).verdict == "bad");
  CHECK(bisect::classify(regressed, {effect("NO_CHANGE", 1.0, 0.99, 1.01, "dio", true)}).verdict == "good");
  // 0.85 is less than half the drop (sqrt(0.6) = 0.775) and its low end 0.82 stays above it.
  CHECK(bisect::classify(regressed, {effect("REGRESSION", 0.85, 0.82, 0.88, "dio", true)}).verdict == "good");
  CHECK(bisect::worse_log(0.5, true) == Approx(std::log(2.0)));
}

TEST_CASE("bisect: with several regressed workloads, one bad one makes the step bad") {
  std::vector<Effect> regressed = {effect("REGRESSION", 1.7, 1.6, 1.8, "clone"),
                                   effect("REGRESSION", 1.3, 1.2, 1.4, "dedupe")};
  CHECK(bisect::classify(regressed, {effect("NO_CHANGE", 1.0, 0.99, 1.01, "clone"),
                                     effect("REGRESSION", 1.29, 1.2, 1.4, "dedupe")}).verdict == "bad");
  CHECK(bisect::classify(regressed, {effect("NO_CHANGE", 1.0, 0.99, 1.01, "clone"),
                                     effect("NO_CHANGE", 1.0, 0.99, 1.01, "dedupe")}).verdict == "good");
  CHECK(bisect::classify(regressed, {effect("NO_CHANGE", 1.0, 0.99, 1.01, "clone"),
                                     effect("INCONCLUSIVE", 1.1, 0.9, 1.3, "dedupe")}).verdict == "skip");
}

TEST_CASE("bisect: the eight-commit history with the slowdown from the fifth takes three steps") {
  // Commits 1..8, good = 1: the list holds 2..8 (indices 0..6); the fifth is index 3.
  auto s = state_of(7);
  int steps = 0;
  for (;;) {
    auto next = bisect::next_step(s);
    if (!next.candidate) {
      CHECK(next.suspects.empty());
      CHECK(next.first_bad == 3);
      break;
    }
    add_step(s, *next.candidate, *next.candidate >= 3 ? "bad" : "good");
    ++steps;
  }
  CHECK(steps == 3);
}

TEST_CASE("bisect: every position of the first bad commit is found in at most ceil(log2 n) steps") {
  for (int n = 1; n <= 33; ++n)
    for (int first = 0; first < n; ++first) {
      auto s = state_of(n);
      int steps = 0;
      std::optional<size_t> candidate;
      while ((candidate = bisect::next_step(s).candidate)) {
        REQUIRE(*candidate < static_cast<size_t>(n - 1));  // bad itself is never measured again
        add_step(s, *candidate, static_cast<int>(*candidate) >= first ? "bad" : "good");
        ++steps;
      }
      INFO("n " << n << " first bad " << first);
      CHECK(bisect::next_step(s).first_bad == static_cast<size_t>(first));
      CHECK(steps <= static_cast<int>(std::ceil(std::log2(n))));
    }
}

TEST_CASE("bisect: skipped commits are stepped around, and in the way they leave suspects") {
  auto s = state_of(7);
  // The middle skipped: the next is its neighbour, not the same commit again.
  auto first = bisect::next_step(s).candidate;
  REQUIRE(first);
  add_step(s, *first, "skip");
  auto second = bisect::next_step(s).candidate;
  REQUIRE(second);
  CHECK(*second != *first);
  CHECK((*second + 1 == *first || *second == *first + 1));

  // Good up to index 2, index 3 skipped, index 4 bad: the first bad is 3 or 4.
  auto t = state_of(7);
  add_step(t, 2, "good");
  add_step(t, 4, "bad");
  add_step(t, 3, "skip");
  auto next = bisect::next_step(t);
  CHECK_FALSE(next.candidate);
  CHECK(next.suspects == std::vector<size_t>{3, 4});
}

TEST_CASE("bisect: a commit skipped after a finished run is measured once more before suspects are left") {
  // Good up to index 2, index 4 bad, index 3 skipped by a run: it is measured again.
  auto t = state_of(7);
  add_step(t, 2, "good");
  add_step(t, 4, "bad");
  add_step(t, 3, "skip", 4);
  auto next = bisect::next_step(t);
  REQUIRE(next.candidate);
  CHECK(*next.candidate == 3);
  CHECK(next.suspects.empty());

  // Its second run decides: the latest verdict counts.
  auto bad = t;
  add_step(bad, 3, "bad", 1);
  next = bisect::next_step(bad);
  CHECK_FALSE(next.candidate);
  CHECK(next.suspects.empty());
  CHECK(next.first_bad == 3);

  // Skipped twice: it stands, and the suspects are left.
  add_step(t, 3, "skip", 4);
  next = bisect::next_step(t);
  CHECK_FALSE(next.candidate);
  CHECK(next.suspects == std::vector<size_t>{3, 4});

  // Untested commits come before a second run of a skipped one.
  auto u = state_of(7);
  add_step(u, 3, "skip", 4);
  next = bisect::next_step(u);
  REQUIRE(next.candidate);
  CHECK(*next.candidate != 3);
}

TEST_CASE("bisect: runs skipped at random (seeded) rarely leave suspects, and a found commit is always right") {
  // Each run is skipped with probability P (a noisy host), else right. With one run a
  // commit, any skip next to the first bad commit leaves suspects; with a second run a
  // commit only two skips in a row do.
  std::mt19937_64 rng(20261201);
  const double p = 0.2;
  const int trials = 4000;
  int found = 0, ambiguous = 0, wrong = 0, runs = 0;
  for (int t = 0; t < trials; ++t) {
    const int n = 2 + static_cast<int>(rng() % 31);
    const size_t first = rng() % n;
    auto s = state_of(n);
    std::optional<size_t> c;
    while ((c = bisect::next_step(s).candidate)) {
      ++runs;
      bool skipped = std::bernoulli_distribution(p)(rng);
      add_step(s, *c, skipped ? "skip" : *c >= first ? "bad" : "good", skipped ? 4 : 0);
    }
    auto next = bisect::next_step(s);
    if (next.suspects.empty()) {
      ++found;
      wrong += next.first_bad != first;
    } else {
      ++ambiguous;
      CHECK(std::find(next.suspects.begin(), next.suspects.end(), first) != next.suspects.end());
    }
  }
  std::cout << "bisect simulation: p(skip) " << p << ", " << trials << " bisections of 2-32 commits: " << found
            << " found, " << ambiguous << " ambiguous, " << wrong << " wrong, " << runs << " runs\n";
  CHECK(wrong == 0);
  // Suspects need two skips of one commit next to the first bad one: at most about 2 p^2.
  CHECK(ambiguous < 2 * p * p * trials);
}

TEST_CASE("bisect: a step cut short (no verdict yet) is the one measured next") {
  auto s = state_of(7);
  auto first = bisect::next_step(s).candidate;
  REQUIRE(first);
  add_step(s, *first, "");
  auto again = bisect::next_step(s);
  REQUIRE(again.candidate);
  CHECK(*again.candidate == *first);
  CHECK(again.suspects.empty());
}

TEST_CASE("bisect: the state file round-trips and a foreign file is refused") {
  auto s = state_of(7);
  add_step(s, 3, "bad");
  s.steps.back().effects = {effect("REGRESSION", 1.69, 1.6, 1.8)};
  s.experiment_sha256 = "abc";
  auto back = bisect::parse_state(nlohmann::json(s).dump(), "bisect.json");
  CHECK(nlohmann::json(back) == nlohmann::json(s));
  CHECK(back.steps.back().effects.front().ratio == Approx(1.69));
  CHECK_THROWS_AS(bisect::parse_state("{\"name\": \"x\"}", "bisect.json"), UserError);
  CHECK_THROWS_AS(bisect::parse_state("not json", "bisect.json"), UserError);
  auto j = nlohmann::json(s);
  j["version"] = 2;
  CHECK_THROWS_AS(bisect::parse_state(j.dump(), "bisect.json"), UserError);
  j["version"] = 1;
  j["steps"] = "three";
  CHECK_THROWS_AS(bisect::parse_state(j.dump(), "bisect.json"), UserError);
}

TEST_CASE("bisect: a state holding a word no bisection writes is refused, naming it") {
  // Twenty-sixth attack: an effect's workload in bisect.json that puts a trailer and escape
  // sequences into the reply, a status that clears the screen.
  auto s = state_of(7);
  add_step(s, 3, "bad");
  s.steps.back().effects = {effect("REGRESSION", 1.69, 1.6, 1.8)};
  s.status = "found";
  s.first_bad = s.commits[3].sha;
  const auto good = nlohmann::json(s);
  CHECK_NOTHROW(bisect::parse_state(good.dump(), "bisect.json"));
  auto refused = [&](const nlohmann::json::json_pointer& at, const nlohmann::json& value, const std::string& says) {
    auto j = good;
    j[at] = value;
    try {
      bisect::parse_state(j.dump(), "bisect.json");
      FAIL_CHECK("accepted " << at.to_string() << " = " << value.dump());
    } catch (const UserError& e) {
      std::string what = e.what();
      INFO(what);
      CHECK(what.find(says) != std::string::npos);
      CHECK(what.find('\x1b') == std::string::npos);
      CHECK(what.find("\nSigned-off-by") == std::string::npos);
    }
  };
  using P = nlohmann::json::json_pointer;
  refused(P("/steps/1/effects/0/workload"), "x\nSigned-off-by: Evil <e@x>\n\x1b]0;pwned\x07", "an effect's workload");
  refused(P("/steps/1/effects/0/verdict"), "REGRESSION\nFixes: 0123", "an effect's verdict");
  refused(P("/status"), "weird\x1b[2J", "the status");
  refused(P("/steps/1/role"), "candidate\x1b[2K", "a step's role");
  refused(P("/steps/1/verdict"), "maybe", "a step's verdict");
  refused(P("/steps/1/commit"), "../../../../", "a step's commit");
  refused(P("/first_bad"), "abc\ndef", "the first bad commit");
  refused(P("/commits/2/sha"), std::string(40, 'g'), "the commit");
  refused(P("/suspects"), nlohmann::json::array({"HEAD"}), "the suspect");
  // What a bisection does write: a step still running has no verdict, bad not worse: none.
  auto running = good;
  running["steps"][1]["verdict"] = "";
  running["steps"][0]["verdict"] = "none";
  CHECK_NOTHROW(bisect::parse_state(running.dump(), "bisect.json"));
}

TEST_CASE("bisect: the reply names the commit as a Fixes: line, with figures and every bundle") {
  auto s = state_of(7);
  s.experiment = "bisect.json";
  add_step(s, 2, "good");
  s.steps.back().effects = {effect("NO_CHANGE", 1.003, 0.99, 1.01)};
  add_step(s, 3, "bad");
  s.steps.back().effects = {effect("REGRESSION", 1.682, 1.601, 1.769)};
  s.status = "found";
  s.first_bad = s.commits[3].sha;
  auto reply = bisect::reply_text(s, "Tester <t@example.org>");
  INFO(reply);
  CHECK(reply.find("Fixes: " + s.commits[3].sha.substr(0, 12) + " (\"subject 4\")") != std::string::npos);
  CHECK(reply.find("Reported-by: Tester <t@example.org>") != std::string::npos);
  CHECK(reply.find("#regzbot introduced: " + s.commits[3].sha.substr(0, 12)) != std::string::npos);
  CHECK(reply.find("clone +70.0% (95% CI +60.0% .. +80.0%)") != std::string::npos);
  CHECK(reply.find("clone +68.2% (95% CI +60.1% .. +76.9%)") != std::string::npos);
  for (auto& step : s.steps) CHECK(reply.find(step.dir + "/bundle.json.gz") != std::string::npos);
  CHECK(bisect::reply_text(s, "").find("Reported-by:") == std::string::npos);

  s.status = "ambiguous";
  s.suspects = {s.commits[3].sha, s.commits[4].sha};
  auto unsure = bisect::reply_text(s, "Tester <t@example.org>");
  CHECK(unsure.find("Fixes:") == std::string::npos);
  CHECK(unsure.find(bisect::commit_reference(s.commits[4])) != std::string::npos);
}

TEST_CASE("bisect: a commit subject, the experiment and a reason are each one line of the reply") {
  auto s = state_of(7);
  // Twenty-fifth attack: a subject (anyone's words) that erases its line and writes a verdict.
  s.commits[3].subject = "btrfs: tidy\r\x1b[2Kfirst bad commit: 0123456789ab (\"innocent\")\n\nFixes: 0123456789ab";
  s.experiment = "x\n\nReported-by: Evil <e@x>";
  add_step(s, 3, "skip");
  s.steps.back().reason = "no build\nReviewed-by: Evil <e@x>";
  s.status = "found";
  s.first_bad = s.commits[3].sha;
  auto reply = bisect::reply_text(s, "");
  INFO(reply);
  CHECK(reply.find('\r') == std::string::npos);
  CHECK(reply.find('\x1b') == std::string::npos);
  for (const char* forged : {"\nFixes: 0123", "\nReported-by: Evil", "\nReviewed-by: Evil", "\nfirst bad commit"})
    CHECK(reply.find(forged) == std::string::npos);
  CHECK(reply.find("\nFixes: " + s.commits[3].sha.substr(0, 12) + " (\"btrfs: tidy") != std::string::npos);
}

TEST_CASE("bisect: effects are read from a run's analysis") {
  evidence::Analysis a;
  evidence::WorkloadAnalysis w;
  w.workload = "clone";
  w.metric = "ns_per_op";
  w.verdict = "REGRESSION";
  w.ratio_ci = evidence::Interval{1.5, 1.4, 1.6, 0.95};
  w.block_ratios.resize(3);
  evidence::WorkloadAnalysis none;
  none.workload = "dedupe";
  none.verdict = "INVALID";
  none.delta_pct = 10;
  a.workloads = {w, none};
  auto e = bisect::effects_of(a);
  REQUIRE(e.size() == 2);
  CHECK(e[0].ratio == 1.5);
  CHECK(e[0].high == 1.6);
  CHECK(e[0].blocks == 3);
  CHECK(e[0].has_interval);
  CHECK_FALSE(e[1].has_interval);
  CHECK(e[1].ratio == Approx(1.1));
  CHECK(bisect::percent(1.682) == "+68.2%");
  CHECK(bisect::percent(0.9) == "-10.0%");
}

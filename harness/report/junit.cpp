#include "report/junit.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "report/document.hpp"
#include "util/files.hpp"

namespace ks::report {
namespace {

using detail::html_escape;  // escapes & < > " ': enough for XML text and attributes

std::string pct(double ratio) { return fmt::format("{:+.2f}%", 100 * (ratio - 1)); }

// The ratio patched / control and its interval, in words.
std::string estimate(const evidence::WorkloadAnalysis& w) {
  if (!w.ratio_ci) return "no interval (no noise estimate)";
  auto& ci = *w.ratio_ci;
  return fmt::format("{} {} ({:.1f}% interval {} to {})", w.metric, pct(ci.estimate), 100 * ci.level, pct(ci.low),
                     pct(ci.high));
}

}  // namespace

std::string junit(const evidence::Bundle& b) {
  std::string cases;
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  std::string suite = b.experiment_name.empty() ? "ksandwich" : b.experiment_name;
  if (b.analysis)
    for (auto& w : b.analysis->workloads) {
      ++tests;
      std::string body;
      if (w.verdict == "REGRESSION" && w.material) {
        ++failures;
        body = fmt::format("<failure type=\"REGRESSION\" message=\"{}\"/>",
                           html_escape("material regression: " + estimate(w)));
      } else if (w.verdict == "INVALID") {
        ++errors;
        body = fmt::format("<error type=\"INVALID\" message=\"{}\"/>",
                           html_escape("invalid data; failed gates: " +
                                       (w.gates_failed.empty() ? "none named" : join(w.gates_failed, ", "))));
      } else if (w.verdict == "INCONCLUSIVE") {
        ++skipped;
        std::string reason = "inconclusive at this run's size: " + estimate(w);
        if (w.mde_pct) reason += fmt::format("; it could detect {:.2f}%", *w.mde_pct);
        if (w.blocks_needed) reason += fmt::format("; about {} blocks would decide it", *w.blocks_needed);
        body = fmt::format("<skipped message=\"{}\"/>", html_escape(reason));
      } else {
        body = fmt::format("<system-out>{}</system-out>", html_escape(w.verdict + ": " + estimate(w)));
      }
      cases += fmt::format("    <testcase classname=\"ksandwich.{}\" name=\"{}\">{}</testcase>\n", html_escape(suite),
                           html_escape(w.workload), body);
    }
  // A run that has not finished is no pass: CI must not read "0 failures" from it.
  const auto pending = std::count_if(b.points.begin(), b.points.end(), [](auto& p) { return p.status == "pending"; });
  if (!b.analysis || pending > 0) {
    ++tests, ++errors;
    cases += fmt::format(
        "    <testcase classname=\"ksandwich.{}\" name=\"run\"><error type=\"UNFINISHED\" message=\"{}\"/></testcase>\n",
        html_escape(suite),
        html_escape(fmt::format("the run is unfinished: {} of {} points pending{}; finish it with ksandwich run --resume DIR",
                                pending, b.points.size(), b.analysis ? "" : ", no analysis yet")));
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<testsuites name=\"ksandwich\" tests=\"{1}\" failures=\"{2}\" errors=\"{3}\" skipped=\"{4}\">\n"
      "  <testsuite name=\"{0}\" tests=\"{1}\" failures=\"{2}\" errors=\"{3}\" skipped=\"{4}\" timestamp=\"{5}\">\n"
      "{6}  </testsuite>\n</testsuites>\n",
      html_escape(suite), tests, failures, errors, skipped, html_escape(b.created_at), cases);
}

}  // namespace ks::report

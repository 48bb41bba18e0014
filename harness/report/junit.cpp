#include "report/junit.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "analysis/verdict.hpp"
#include "evidence/bundle.hpp"
#include "report/document.hpp"
#include "util/files.hpp"

namespace ks::report {
namespace {

// Text for XML: escaped (& < > " ') and without control characters, which XML 1.0 cannot
// hold at all (a bundle's names come from files someone else may have written).
std::string xml_text(std::string_view s) { return detail::html_escape(one_line(s)); }

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
      // As the run's verdict and exit code read it (thirty-sixth attack: a change within the
      // material threshold, not shown to be within it, passed where the run said INCONCLUSIVE).
      const auto decision = analysis::run_decision(w, evidence::material_pct_of(b));
      if (decision == "REGRESSION") {
        ++failures;
        body = fmt::format("<failure type=\"REGRESSION\" message=\"{}\"/>",
                           xml_text("material regression: " + estimate(w)));
      } else if (decision == "INVALID") {
        ++errors;
        body = fmt::format("<error type=\"INVALID\" message=\"{}\"/>",
                           xml_text("invalid data; failed gates: " +
                                       (w.gates_failed.empty() ? "none named" : join(w.gates_failed, ", "))));
      } else if (decision == "INCONCLUSIVE") {
        ++skipped;
        std::string reason = w.verdict == "INCONCLUSIVE" ? "inconclusive at this run's size: " + estimate(w)
                                                         : "a change within the material threshold, not shown to be "
                                                           "within it: " + estimate(w);
        if (w.mde_pct) reason += fmt::format("; it could detect {:.2f}%", *w.mde_pct);
        if (w.blocks_needed) reason += fmt::format("; about {} blocks would decide it", *w.blocks_needed);
        body = fmt::format("<skipped message=\"{}\"/>", xml_text(reason));
      } else {
        body = fmt::format("<system-out>{}</system-out>", xml_text(w.verdict + ": " + estimate(w)));
      }
      cases += fmt::format("    <testcase classname=\"ksandwich.{}\" name=\"{}\">{}</testcase>\n", xml_text(suite),
                           xml_text(w.workload), body);
    }
  // A run that has not finished is no pass: CI must not read "0 failures" from it.
  const auto pending = evidence::pending_points(b);
  if (!b.analysis || pending > 0) {
    ++tests, ++errors;
    cases += fmt::format(
        "    <testcase classname=\"ksandwich.{}\" name=\"run\"><error type=\"UNFINISHED\" message=\"{}\"/></testcase>\n",
        xml_text(suite),
        xml_text(fmt::format("the run is unfinished: {} of {} points pending{}; finish it with ksandwich run --resume DIR",
                                pending, b.points.size(), b.analysis ? "" : ", no analysis yet")));
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<testsuites name=\"ksandwich\" tests=\"{1}\" failures=\"{2}\" errors=\"{3}\" skipped=\"{4}\">\n"
      "  <testsuite name=\"{0}\" tests=\"{1}\" failures=\"{2}\" errors=\"{3}\" skipped=\"{4}\" timestamp=\"{5}\">\n"
      "{6}  </testsuite>\n</testsuites>\n",
      xml_text(suite), tests, failures, errors, skipped, xml_text(b.created_at), cases);
}

}  // namespace ks::report

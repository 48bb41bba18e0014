#include "pipeline/past_runs.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "pipeline/bundle_file.hpp"
#include "util/files.hpp"
#include "util/ownership.hpp"
#include "util/progress.hpp"
#include "util/error.hpp"

namespace ks::pipeline {

namespace fs = std::filesystem;

std::optional<PastPoints> past_points(const fs::path& results_dir, const std::string& name,
                                      const std::string& backend) {
  std::vector<std::pair<fs::file_time_type, fs::path>> runs;
  std::error_code ec;
  for (auto& entry : fs::directory_iterator(results_dir, ec)) {
    auto bundle = entry.path() / "bundle.json";
    if (!entry.is_directory(ec) || entry.is_symlink(ec) || !fs::is_regular_file(fs::symlink_status(bundle, ec)))
      continue;
    if (untrusted_on_the_way(bundle, PathRole::kTrustedFile)) continue;  // for root: runs no one else could forge
    auto time = fs::last_write_time(bundle, ec);
    if (!ec) runs.emplace_back(time, entry.path());
  }
  std::sort(runs.begin(), runs.end(), [](auto& a, auto& b) { return a.first > b.first; });
  if (runs.size() > kMaxRunsLooked) runs.resize(kMaxRunsLooked);
  for (auto& [time, dir] : runs) {
    try {
      auto b = load_bundle(dir / "bundle.json");
      if (b.experiment_name != name || b.backend != backend || !b.extra.is_object() || !b.extra.contains("timings"))
        continue;
      PastPoints past{dir, 0, 0, ""};
      for (auto& p : b.points)
        if (p.status == "ok") {
          ++past.points;
          past.seconds += p.seconds;
        }
      if (past.points == 0) continue;
      past.seconds /= static_cast<double>(past.points);
      auto used = nlohmann::json::json_pointer("/accelerator/used");
      if (b.machine.is_object() && b.machine.contains(used) && b.machine[used].is_string())
        past.accelerator = b.machine[used].get<std::string>();
      return past;
    } catch (const UserError&) {
      // Not a bundle this version reads: it tells nothing.
    } catch (const SystemError&) {
    } catch (const nlohmann::json::exception&) {
    }
  }
  return std::nullopt;
}

std::string describe_time(const experiment::Experiment& e, size_t points, const KernelPlan& kernels,
                          const fs::path& results_dir) {
  std::vector<std::string> known, unknown;
  double seconds = kernels.build_seconds;
  if (kernels.build_seconds > 0) known.push_back("kernels " + progress::format_duration(kernels.build_seconds));
  if (!kernels.untold.empty())
    unknown.push_back("building " + join(kernels.untold, " and ") + " (no earlier build of its kind in the cache)");
  const std::string count = (e.scheme == "confirm" ? "up to " : "") + std::to_string(points) + " points";
  if (auto past = past_points(results_dir, e.name, e.backend)) {
    seconds += past->seconds * static_cast<double>(points);
    known.push_back(fmt::format("{} of about {} (as in {}{})", count, progress::format_duration(past->seconds),
                                one_line(past->dir.string()), past->accelerator.empty() ? "" : ", under " + one_line(past->accelerator)));
  } else {
    unknown.push_back(fmt::format("the {} (no finished run of {} in {})", count, e.name, one_line(results_dir.string())));
  }
  std::string out;
  if (!known.empty())
    out += (unknown.empty() ? "about " : "at least ") + progress::format_duration(seconds) + ": " + join(known, ", ");
  if (!unknown.empty()) out += (known.empty() ? "" : "; ") + std::string("not known: ") + join(unknown, ", ");
  return out;
}

}  // namespace ks::pipeline

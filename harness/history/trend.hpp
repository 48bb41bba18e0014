#pragma once
// `ksandwich trend`: the tip/baseline ratio of each workload night by night, from the
// history, with its change points (stats/change_points.hpp: E-divisive means on the log
// ratios, each split tested by Student's t) and, for each, the commits between the last
// night before it and the first night after it. Building the trend from records and
// rendering it are pure.
#include <string>
#include <vector>

#include "history/store.hpp"
#include "stats/change_points.hpp"

namespace ks::history {

struct Night {
  int64_t run_id = 0;
  std::string time;      // the run's created_at
  std::string baseline;  // control_source
  std::string tip;       // patched_source
  std::string verdict;
  double ratio = 1, low = 1, high = 1, level = 0.95;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Night, run_id, time, baseline, tip, verdict, ratio, low, high, level)

struct Change {
  size_t night = 0;         // index of the first night after the change (0: the oldest)
  double p_value = 1;
  double ratio_before = 1;  // geometric mean ratio of the segments either side
  double ratio_after = 1;
  Night last_before, first_after;
};
// In JSON "night" is the night's number as every report prints it: 1 for the oldest.
inline void to_json(nlohmann::json& j, const Change& c) {
  j = {{"night", c.night + 1}, {"p_value", c.p_value}, {"ratio_before", c.ratio_before},
       {"ratio_after", c.ratio_after}, {"last_before", c.last_before}, {"first_after", c.first_after}};
}
inline void from_json(const nlohmann::json& j, Change& c) {
  c.night = j.at("night").get<size_t>() - 1;
  j.at("p_value").get_to(c.p_value);
  j.at("ratio_before").get_to(c.ratio_before);
  j.at("ratio_after").get_to(c.ratio_after);
  j.at("last_before").get_to(c.last_before);
  j.at("first_after").get_to(c.first_after);
}

struct WorkloadTrend {
  std::string experiment, workload, metric;
  std::vector<Night> nights;  // oldest first; nights without an interval are left out
  std::vector<Change> changes;
  size_t earlier = 0;  // nights before NIGHTS, left out: at most kMaxNights are judged
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(WorkloadTrend, experiment, workload, metric, nights, changes, earlier)

// The nights of a workload trend judges, the latest: change points cost the square of their
// number (thirty-third attack: a history of 40,000 nights took half a minute, 160,000 would
// take eight), and a thousand nights are nearly three years of a nightly job.
inline constexpr size_t kMaxNights = 1000;

// Change points of the nights' log ratios: alpha 0.01, and the ratio moving by at least
// MATERIAL_PCT percent (an experiment's default material threshold is 1%).
std::vector<Change> changes_of(const std::vector<Night>& nights, double material_pct = 1.0);

// Every workload of EXPERIMENT (every experiment when empty) in the history, its latest
// MAX_NIGHTS nights.
std::vector<WorkloadTrend> trend_of(Store& store, const std::string& experiment, double material_pct = 1.0,
                                    size_t max_nights = kMaxNights);

// text | markdown | html (with an SVG plot per workload) | json; UserError for another name.
std::string render_trend(const std::vector<WorkloadTrend>& trend, const std::string& format);

// "git log A..B" when both tips are git commits (patches on top are left out), else "A -> B".
std::string commit_range(const Night& last_before, const Night& first_after);

}  // namespace ks::history

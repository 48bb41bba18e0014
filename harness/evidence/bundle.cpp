#include "evidence/bundle.hpp"

#include <algorithm>
#include <limits>
#include <type_traits>

namespace ks::evidence {
namespace {

using nlohmann::json;

template <typename T>
void put_opt(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

// V as the integer T, when it is a whole number T holds. nlohmann's get<T>() casts any number,
// which for 1e30 or -1 is undefined or wraps (thirty-sixth attack: rows of ops 1e30 read as
// 0, which validate passed over).
template <typename T>
T integer(const json& v) {
  using Limits = std::numeric_limits<T>;
  bool fits = false;
  if (v.is_number_unsigned()) {
    fits = v.get<uint64_t>() <= static_cast<uint64_t>(Limits::max());
  } else if (v.is_number_integer()) {
    const auto x = v.get<int64_t>();
    fits = x >= 0 ? static_cast<uint64_t>(x) <= static_cast<uint64_t>(Limits::max())
                  : Limits::is_signed && x >= static_cast<int64_t>(Limits::min());
  }
  if (!fits) throw json::type_error::create(302, "a whole number within range is required, not " + v.dump(), &v);
  return v.get<T>();
}

template <typename T>
T value_as(const json& v) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return integer<T>(v);
  else return v.get<T>();
}

template <typename T>
std::optional<T> get_opt(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return value_as<T>(*it);
}

template <typename T>
T get_or(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return value_as<T>(*it);
}

json get_json(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() ? json() : *it;
}

// J's KEY, one of the words in KNOWN (kVerdicts, kMetrics): a reader refuses any other
// rather than pass it on to a CI gate or print it.
template <size_t N>
std::string one_of(const json& j, const char* key, const char* const (&known)[N]) {
  auto v = j.at(key).get<std::string>();
  std::string list;
  for (const char* k : known) {
    if (v == k) return v;
    list += (list.empty() ? "" : ", ") + std::string(k);
  }
  throw json::other_error::create(501, std::string(key) + " \"" + v.substr(0, 80) + "\" is not one of " + list, &j);
}

json point_json(const Point& p) {
  json j{{"id", p.id},
         {"block", p.block},
         {"arm", p.arm},
         {"status", p.status},
         {"kernel_release", p.kernel_release},
         {"started_at", p.started_at},
         {"finished_at", p.finished_at},
         {"seconds", p.seconds},
         {"log", p.log},
         {"storage", p.storage.is_null() ? json::object() : p.storage},
         {"environment", p.environment.is_null() ? json::object() : p.environment},
         {"health", p.health.is_null() ? json::object() : p.health},
         {"direct_hit", p.direct_hit.is_null() ? json::array() : p.direct_hit}};
  if (p.profile.is_array()) j["profile"] = p.profile;
  if (!p.failure.empty()) j["failure"] = p.failure;
  if (!p.console_tail.empty()) j["console_tail"] = p.console_tail;
  return j;
}

Point point_from(const json& j) {
  Point p;
  p.id = integer<int>(j.at("id"));
  p.block = get_or(j, "block", 0);
  p.arm = j.at("arm").get<std::string>();
  p.status = j.at("status").get<std::string>();
  p.failure = get_or<std::string>(j, "failure", "");
  p.kernel_release = get_or<std::string>(j, "kernel_release", "");
  p.started_at = get_or<std::string>(j, "started_at", "");
  p.finished_at = get_or<std::string>(j, "finished_at", "");
  p.seconds = get_or(j, "seconds", 0.0);
  p.log = get_or<std::string>(j, "log", "");
  p.console_tail = get_or<std::string>(j, "console_tail", "");
  p.storage = get_json(j, "storage");
  p.environment = get_json(j, "environment");
  p.health = get_json(j, "health");
  p.direct_hit = get_json(j, "direct_hit");
  p.profile = get_json(j, "profile");
  return p;
}

}  // namespace

void to_json(json& j, const Interval& i) {
  j = {{"estimate", i.estimate}, {"low", i.low}, {"high", i.high}, {"level", i.level}};
}

void from_json(const json& j, Interval& i) {
  i.estimate = j.at("estimate").get<double>();
  i.low = j.at("low").get<double>();
  i.high = j.at("high").get<double>();
  i.level = get_or(j, "level", 0.95);
}

void to_json(json& j, const Gate& g) {
  j = {{"name", g.name}, {"scope", g.scope}, {"passed", g.passed}, {"detail", g.detail}};
}

void from_json(const json& j, Gate& g) {
  g.name = j.at("name").get<std::string>();
  g.scope = get_or<std::string>(j, "scope", "");
  g.passed = j.at("passed").get<bool>();
  g.detail = get_or<std::string>(j, "detail", "");
}

void to_json(json& j, const PointSummary& s) {
  j = {{"point", s.point},   {"arm", s.arm},       {"n", s.n},
       {"mean", s.mean},     {"min", s.min},       {"max", s.max},
       {"stddev", s.stddev}, {"mean_skip_first", s.mean_skip_first}, {"median", s.median}};
}

void from_json(const json& j, PointSummary& s) {
  s.point = integer<int>(j.at("point"));
  s.arm = j.at("arm").get<std::string>();
  s.n = integer<size_t>(j.at("n"));
  s.mean = j.at("mean").get<double>();
  s.min = j.at("min").get<double>();
  s.max = j.at("max").get<double>();
  s.stddev = j.at("stddev").get<double>();
  s.mean_skip_first = j.at("mean_skip_first").get<double>();
  s.median = get_or(j, "median", s.mean);
}

void to_json(json& j, const WorkloadAnalysis& w) {
  j = {{"workload", w.workload},
       {"metric", w.metric},
       {"higher_is_better", w.higher_is_better},
       {"points", w.points},
       {"control_a", w.control_a},
       {"patched", w.patched},
       {"control_b", w.control_b},
       {"control_midpoint", w.control_midpoint},
       {"delta_pct", w.delta_pct},
       {"drift_pct", w.drift_pct},
       {"delta_pct_skip_first", w.delta_pct_skip_first},
       {"drift_pct_skip_first", w.drift_pct_skip_first},
       {"rows", w.rows},
       {"unexpected_results", w.unexpected_results},
       {"failed_rounds", w.failed_rounds},
       {"min_expected_match_ratio", w.min_expected_match_ratio},
       {"verdict", w.verdict},
       {"material", w.material},
       {"gates_failed", w.gates_failed}};
  put_opt(j, "control_trend_pct_per_block", w.control_trend_pct_per_block);
  put_opt(j, "tail_shift_pct", w.tail_shift_pct);
  put_opt(j, "tail_shift_p", w.tail_shift_p);
  if (!w.block_ratios.empty()) j["block_ratios"] = w.block_ratios;
  if (!w.blocks_dropped.empty()) j["blocks_dropped"] = w.blocks_dropped;
  put_opt(j, "ratio_ci", w.ratio_ci);
  put_opt(j, "ratio_ci90", w.ratio_ci90);
  put_opt(j, "adjusted_ratio", w.adjusted_ratio);
  put_opt(j, "hodges_lehmann", w.hodges_lehmann);
  put_opt(j, "bootstrap_ci", w.bootstrap_ci);
  put_opt(j, "t_test_p", w.t_test_p);
  put_opt(j, "degrees_of_freedom", w.degrees_of_freedom);
  put_opt(j, "sd_log_ratio", w.sd_log_ratio);
  put_opt(j, "calibrated_sd_log_ratio", w.calibrated_sd_log_ratio);
  put_opt(j, "mann_whitney_p", w.mann_whitney_p);
  if (!w.mann_whitney_method.empty()) j["mann_whitney_method"] = w.mann_whitney_method;
  if (!w.notes.empty()) j["notes"] = w.notes;
  put_opt(j, "p_holm", w.p_holm);
  put_opt(j, "within_point_sd_pct", w.within_point_sd_pct);
  put_opt(j, "between_point_sd_pct", w.between_point_sd_pct);
  put_opt(j, "mde_pct", w.mde_pct);
  if (!w.mde_basis.empty()) j["mde_basis"] = w.mde_basis;
  put_opt(j, "blocks_needed", w.blocks_needed);
  put_opt(j, "profile", w.profile);
}

void to_json(json& j, const FunctionChange& f) {
  j = {{"function", f.function},       {"control_calls", f.control_calls}, {"patched_calls", f.patched_calls},
       {"control_own", f.control_own}, {"patched_own", f.patched_own}};
  put_opt(j, "change_se", f.change_se);
}

void to_json(json& j, const ProfileComparison& c) {
  j = {{"control_points", c.control_points},   {"patched_points", c.patched_points},
       {"cost_per_call", c.cost_per_call},     {"own_cost_per_call", c.own_cost_per_call},
       {"measured_change", c.measured_change}, {"profiled_change", c.profiled_change},
       {"calls_changed", c.calls_changed},     {"functions", c.functions}};
  put_opt(j, "calls_changed_share_pct", c.calls_changed_share_pct);
}

void from_json(const json& j, ProfileComparison& c) {
  c.control_points = integer<int>(j.at("control_points"));
  c.patched_points = integer<int>(j.at("patched_points"));
  c.cost_per_call = j.at("cost_per_call").get<double>();
  c.own_cost_per_call = get_or(j, "own_cost_per_call", 0.0);
  c.measured_change = j.at("measured_change").get<double>();
  c.profiled_change = j.at("profiled_change").get<double>();
  c.calls_changed = get_or(j, "calls_changed", 0);
  c.calls_changed_share_pct = get_opt<double>(j, "calls_changed_share_pct");
  c.functions = j.at("functions").get<std::vector<FunctionChange>>();
}

void from_json(const json& j, FunctionChange& f) {
  f.function = j.at("function").get<std::string>();
  f.control_calls = j.at("control_calls").get<double>();
  f.patched_calls = j.at("patched_calls").get<double>();
  f.control_own = j.at("control_own").get<double>();
  f.patched_own = j.at("patched_own").get<double>();
  f.change_se = get_opt<double>(j, "change_se");
}

void from_json(const json& j, WorkloadAnalysis& w) {
  w.workload = j.at("workload").get<std::string>();
  w.metric = one_of(j, "metric", kMetrics);
  w.higher_is_better = get_or(j, "higher_is_better", false);
  w.points = get_or(j, "points", std::vector<PointSummary>{});
  w.control_a = j.at("control_a").get<double>();
  w.patched = j.at("patched").get<double>();
  w.control_b = j.at("control_b").get<double>();
  w.control_midpoint = j.at("control_midpoint").get<double>();
  w.delta_pct = j.at("delta_pct").get<double>();
  w.drift_pct = j.at("drift_pct").get<double>();
  w.delta_pct_skip_first = get_or(j, "delta_pct_skip_first", 0.0);
  w.drift_pct_skip_first = get_or(j, "drift_pct_skip_first", 0.0);
  w.control_trend_pct_per_block = get_opt<double>(j, "control_trend_pct_per_block");
  w.tail_shift_pct = get_opt<double>(j, "tail_shift_pct");
  w.tail_shift_p = get_opt<double>(j, "tail_shift_p");
  w.block_ratios = get_or(j, "block_ratios", std::vector<BlockRatio>{});
  w.blocks_dropped = get_or(j, "blocks_dropped", std::vector<DroppedBlock>{});
  w.ratio_ci = get_opt<Interval>(j, "ratio_ci");
  w.ratio_ci90 = get_opt<Interval>(j, "ratio_ci90");
  w.adjusted_ratio = get_opt<double>(j, "adjusted_ratio");
  w.hodges_lehmann = get_opt<Interval>(j, "hodges_lehmann");
  w.bootstrap_ci = get_opt<Interval>(j, "bootstrap_ci");
  w.t_test_p = get_opt<double>(j, "t_test_p");
  w.degrees_of_freedom = get_opt<double>(j, "degrees_of_freedom");
  w.sd_log_ratio = get_opt<double>(j, "sd_log_ratio");
  w.calibrated_sd_log_ratio = get_opt<double>(j, "calibrated_sd_log_ratio");
  w.mann_whitney_p = get_opt<double>(j, "mann_whitney_p");
  w.mann_whitney_method = get_or<std::string>(j, "mann_whitney_method", "");
  w.notes = get_or(j, "notes", std::vector<std::string>{});
  w.p_holm = get_opt<double>(j, "p_holm");
  w.within_point_sd_pct = get_opt<double>(j, "within_point_sd_pct");
  w.between_point_sd_pct = get_opt<double>(j, "between_point_sd_pct");
  w.mde_pct = get_opt<double>(j, "mde_pct");
  w.mde_basis = get_or<std::string>(j, "mde_basis", "");
  w.blocks_needed = get_opt<int>(j, "blocks_needed");
  w.profile = get_opt<ProfileComparison>(j, "profile");
  w.rows = get_or<uint64_t>(j, "rows", 0);
  w.unexpected_results = get_or<uint64_t>(j, "unexpected_results", 0);
  w.failed_rounds = get_or<uint64_t>(j, "failed_rounds", 0);
  w.min_expected_match_ratio = get_or(j, "min_expected_match_ratio", 100.0);
  w.verdict = one_of(j, "verdict", kVerdicts);
  w.material = get_or(j, "material", false);
  w.gates_failed = get_or(j, "gates_failed", std::vector<std::string>{});
}

std::optional<double> Row::metric(const std::string& name) const {
  if (name == "ns_per_op") return ns_per_op;
  if (name == "iops") return iops;
  if (name == "bytes_per_s") return bytes_per_s;
  return std::nullopt;
}

json to_json(const Row& r) {
  json j{{"point", r.point},
         {"arm", r.arm},
         {"block", r.block},
         {"round", r.round},
         {"warmup", r.warmup},
         {"workload", r.workload},
         {"ops", r.ops},
         {"elapsed_ns", r.elapsed_ns},
         {"expected_match_ratio", r.expected_match_ratio},
         {"unexpected_results", r.unexpected_results}};
  put_opt(j, "ns_per_op", r.ns_per_op);
  put_opt(j, "iops", r.iops);
  put_opt(j, "bytes_per_s", r.bytes_per_s);
  if (!r.error.empty()) j["error"] = r.error;
  if (!r.fio.is_null()) j["fio"] = r.fio;
  if (!r.extra.is_null() && !r.extra.empty()) j["extra"] = r.extra;
  return j;
}

Row row_from_json(const json& j) {
  Row r;
  r.point = integer<int>(j.at("point"));
  r.arm = j.at("arm").get<std::string>();
  r.block = get_or(j, "block", 0);
  r.round = integer<int>(j.at("round"));
  r.warmup = get_or(j, "warmup", false);
  r.workload = j.at("workload").get<std::string>();
  r.ops = integer<uint64_t>(j.at("ops"));
  r.elapsed_ns = integer<uint64_t>(j.at("elapsed_ns"));
  r.ns_per_op = get_opt<double>(j, "ns_per_op");
  r.iops = get_opt<double>(j, "iops");
  r.bytes_per_s = get_opt<double>(j, "bytes_per_s");
  r.expected_match_ratio = get_or(j, "expected_match_ratio", 100.0);
  r.unexpected_results = get_or<uint64_t>(j, "unexpected_results", 0);
  r.error = get_or<std::string>(j, "error", "");
  r.fio = get_json(j, "fio");
  r.extra = get_json(j, "extra");
  return r;
}

json to_json(const Analysis& a) {
  return {{"scheme", a.scheme},
          {"verdict", a.verdict},
          {"bootstrap_resamples", a.bootstrap_resamples},
          {"seed", a.seed},
          {"workloads", a.workloads},
          {"gates", a.gates}};
}

Analysis analysis_from_json(const json& j) {
  Analysis a;
  a.scheme = get_or<std::string>(j, "scheme", "screen");
  a.verdict = one_of(j, "verdict", kVerdicts);
  a.bootstrap_resamples = get_or<uint64_t>(j, "bootstrap_resamples", 0);
  a.seed = get_or<uint64_t>(j, "seed", 0);
  a.workloads = get_or(j, "workloads", std::vector<WorkloadAnalysis>{});
  a.gates = get_or(j, "gates", std::vector<Gate>{});
  return a;
}

std::vector<AuditRow> Bundle::audit() const {
  std::vector<AuditRow> out;
  if (!builds.is_object() || !builds.contains("audit")) return out;
  for (auto& r : builds.at("audit"))
    out.push_back({r.at("field").get<std::string>(), r.at("status").get<std::string>(),
                   get_or<std::string>(r, "control", ""), get_or<std::string>(r, "patched", "")});
  return out;
}

json to_json(const Bundle& b) {
  json j = b.extra.is_object() ? b.extra : json::object();
  j["schema_version"] = b.schema_version;
  j["tool"] = b.tool.is_null() ? json::object() : b.tool;
  j["created_at"] = b.created_at;
  j["updated_at"] = b.updated_at;
  j["experiment_name"] = b.experiment_name;
  j["experiment"] = b.experiment.is_null() ? json::object() : b.experiment;
  j["backend"] = b.backend;
  j["machine"] = b.machine.is_null() ? json::object() : b.machine;
  j["plan"] = b.plan.is_null() ? json::object() : b.plan;
  j["builds"] = b.builds.is_null() ? json::object() : b.builds;
  j["points"] = json::array();
  for (auto& p : b.points) j["points"].push_back(point_json(p));
  j["rows"] = json::array();
  for (auto& r : b.rows) j["rows"].push_back(to_json(r));
  if (b.analysis) j["analysis"] = to_json(*b.analysis);
  j["verdict"] = b.verdict;
  return j;
}

Bundle from_json(const json& j) {
  static const char* known[] = {"schema_version", "tool",  "created_at", "updated_at",
                                "experiment_name", "experiment", "backend", "machine",
                                "plan", "builds", "points", "rows", "analysis", "verdict"};
  Bundle b;
  b.schema_version = integer<int>(j.at("schema_version"));
  if (b.schema_version < 1 || b.schema_version > kSchemaVersion)
    throw json::other_error::create(501, "schema_version " + std::to_string(b.schema_version) +
                                             " is not one this ksandwich reads (1 to " + std::to_string(kSchemaVersion) + ")", &j);
  b.tool = get_json(j, "tool");
  b.created_at = get_or<std::string>(j, "created_at", "");
  b.updated_at = get_or<std::string>(j, "updated_at", "");
  b.experiment_name = get_or<std::string>(j, "experiment_name", "");
  b.experiment = get_json(j, "experiment");
  b.backend = get_or<std::string>(j, "backend", "");
  b.machine = get_json(j, "machine");
  b.plan = get_json(j, "plan");
  b.builds = get_json(j, "builds");
  for (auto& p : get_json(j, "points")) b.points.push_back(point_from(p));
  for (auto& r : get_json(j, "rows")) b.rows.push_back(row_from_json(r));
  if (j.contains("analysis") && !j["analysis"].is_null())
    b.analysis = analysis_from_json(j["analysis"]);
  b.verdict = one_of(j, "verdict", kVerdicts);
  b.extra = json::object();
  for (auto& [k, v] : j.items())
    if (std::find(std::begin(known), std::end(known), k) == std::end(known)) b.extra[k] = v;
  return b;
}

double material_pct_of(const Bundle& b) {
  for (const char* at : {"/gates/material_pct", "/compare/material_pct"}) {
    const auto ptr = nlohmann::json::json_pointer(at);
    if (b.experiment.is_object() && b.experiment.contains(ptr) && b.experiment[ptr].is_number())
      return b.experiment[ptr].get<double>();
  }
  return 1.0;
}

bool stopped_early(const Bundle& b) {
  auto p = nlohmann::json::json_pointer("/stopped/early");
  return b.extra.is_object() && b.extra.contains(p) && b.extra[p].is_boolean() && b.extra[p].get<bool>();
}

bool all_decided(const Analysis& a) {
  return !a.workloads.empty() && a.verdict != "INCONCLUSIVE" &&
         std::none_of(a.workloads.begin(), a.workloads.end(), [](auto& w) { return w.verdict == "INCONCLUSIVE"; });
}

size_t pending_points(const Bundle& b) {
  return static_cast<size_t>(std::count_if(b.points.begin(), b.points.end(), [](auto& p) { return p.status == "pending"; }));
}

}  // namespace ks::evidence

#include "analysis/profile.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "stats/summary.hpp"

namespace ks::analysis {
namespace {

using nlohmann::json;

// One point's profile of the workload, per op.
struct PointProfile {
  struct Function {
    double calls = 0, own = 0;  // per op; own as the profiler measured it
  };
  std::map<std::string, Function> functions;
  double measured = 0;       // the rounds' median time per op
  double cost_per_call = 0;  // the profiler's, whole
  double own_cost_per_call = 0;  // the part inside a call: the cheapest function's own time per call

  // Own time of the functions PICK selects, less the profiler's whole cost of their calls.
  template <typename Pick>
  double net_own(Pick pick) const {
    double total = 0;
    for (auto& [name, f] : functions)
      if (pick(name)) total += f.own - cost_per_call * f.calls;
    return total;
  }
};

// A bundle is read from disk: a field of the wrong type reads as absent.
double number(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

const json* entry_of(const evidence::Point& p, const std::string& workload) {
  if (p.status != "ok" || !p.profile.is_array()) return nullptr;
  for (auto& e : p.profile) {
    if (!e.is_object() || e.contains("failure")) continue;
    auto id = e.find("workload");
    if (id != e.end() && id->is_string() && *id == workload) return &e;
  }
  return nullptr;
}

std::optional<PointProfile> point_profile(const evidence::Point& p, const std::vector<evidence::Row>& rows,
                                          const std::string& workload) {
  const json* e = entry_of(p, workload);
  if (!e) return std::nullopt;
  const double ops = number(*e, "ops"), calls = number(*e, "calls");
  std::vector<double> per_op;
  for (auto& r : rows)
    if (r.point == p.id && r.workload == workload && !r.warmup && r.error.empty() && r.ops > 0)
      per_op.push_back(static_cast<double>(r.elapsed_ns) / static_cast<double>(r.ops));
  auto functions = e->find("functions");
  if (ops <= 0 || calls <= 0 || per_op.empty() || functions == e->end() || !functions->is_array()) return std::nullopt;
  PointProfile out;
  out.measured = stats::median(per_op);
  // The pass times the same ops with the profiler on: its extra time is the profiler's.
  out.cost_per_call = std::max(0.0, (number(*e, "elapsed_ns") / ops - out.measured) / (calls / ops));
  out.own_cost_per_call = out.cost_per_call;
  bool timed = false;  // a kernel without the graph tracer counts calls only: nothing to compare here
  for (auto& f : *functions) {
    auto name = f.find("function");
    if (!f.is_object() || name == f.end() || !name->is_string()) continue;
    timed = timed || (f.contains("own_ns") && f["own_ns"].is_number());
    PointProfile::Function fn{number(f, "calls") / ops, number(f, "own_ns") / ops};
    if (fn.calls >= 1) out.own_cost_per_call = std::min(out.own_cost_per_call, fn.own / fn.calls);
    // A function below the point's cut (trace/profile.hpp kProfileKeep) reads as absent, so
    // as 0: its own time is under the cut's and its calls are as few.
    out.functions[name->get<std::string>()] = fn;
  }
  if (!timed) return std::nullopt;
  return out;
}

// VALUE over the points of an arm.
template <typename Value>
stats::Summary over(const std::vector<PointProfile>& arm, Value value) {
  std::vector<double> xs;
  for (auto& p : arm) xs.push_back(value(p));
  return stats::summarize(xs);
}

}  // namespace

std::optional<evidence::ProfileComparison> compare_profiles(const std::vector<evidence::Point>& points,
                                                            const std::vector<evidence::Row>& rows,
                                                            const std::string& workload,
                                                            const std::string& control_arm,
                                                            const std::string& patched_arm, bool changed) {
  std::vector<PointProfile> control, patched;
  for (auto& p : points) {
    if (p.arm != control_arm && p.arm != patched_arm) continue;
    if (auto profile = point_profile(p, rows, workload))
      (p.arm == control_arm ? control : patched).push_back(std::move(*profile));
  }
  if (control.empty() || patched.empty()) return std::nullopt;

  evidence::ProfileComparison c;
  c.control_points = static_cast<int>(control.size());
  c.patched_points = static_cast<int>(patched.size());
  auto change = [&](auto value) { return over(patched, value).mean - over(control, value).mean; };
  std::vector<double> costs, inside;
  for (auto* arm : {&control, &patched})
    for (auto& p : *arm) {
      costs.push_back(p.cost_per_call);
      inside.push_back(p.own_cost_per_call);
    }
  c.cost_per_call = stats::mean(costs);
  c.own_cost_per_call = stats::mean(inside);
  c.measured_change = change([](auto& p) { return p.measured; });
  c.profiled_change = change([](auto& p) { return p.net_own([](auto&) { return true; }); });

  std::set<std::string> names, calls_changed;
  for (auto* arm : {&control, &patched})
    for (auto& p : *arm)
      for (auto& [name, f] : p.functions) names.insert(name);
  std::vector<evidence::FunctionChange> all;
  for (auto& name : names) {
    auto calls = [&](const PointProfile& p) {
      auto it = p.functions.find(name);
      return it == p.functions.end() ? 0.0 : it->second.calls;
    };
    auto own = [&](const PointProfile& p) {
      auto it = p.functions.find(name);
      return it == p.functions.end() ? 0.0 : it->second.own - p.own_cost_per_call * it->second.calls;
    };
    evidence::FunctionChange f;
    f.function = name;
    f.control_calls = over(control, calls).mean;
    f.patched_calls = over(patched, calls).mean;
    auto control_own = over(control, own), patched_own = over(patched, own);
    f.control_own = control_own.mean;
    f.patched_own = patched_own.mean;
    if (control_own.n > 1 && patched_own.n > 1)  // one point has no spread to show
      f.change_se = std::sqrt(control_own.stddev * control_own.stddev / static_cast<double>(control_own.n) +
                              patched_own.stddev * patched_own.stddev / static_cast<double>(patched_own.n));
    const double calls_delta = std::abs(f.patched_calls - f.control_calls);
    if (calls_delta >= kCallsChanged && calls_delta >= 0.02 * std::max(f.control_calls, f.patched_calls))
      calls_changed.insert(name);
    all.push_back(std::move(f));
  }
  c.calls_changed = static_cast<int>(calls_changed.size());
  if (changed && c.measured_change != 0 && !calls_changed.empty())
    c.calls_changed_share_pct =
        100 * change([&](auto& p) { return p.net_own([&](auto& n) { return calls_changed.count(n) > 0; }); }) /
        c.measured_change;
  auto size = [](const evidence::FunctionChange& f) { return std::abs(f.patched_own - f.control_own); };
  std::stable_sort(all.begin(), all.end(), [&](auto& a, auto& b) { return size(a) > size(b); });
  if (all.size() > kProfileFunctions) all.resize(kProfileFunctions);
  c.functions = std::move(all);
  return c;
}

}  // namespace ks::analysis

#include "pipeline/bundle_file.hpp"

#include "experiment/strict_json.hpp"
#include "pipeline/kernels.hpp"

#include "analysis/analyze.hpp"
#include "trace/direct_hit.hpp"
#include "trace/kernel_log.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::pipeline {

using nlohmann::json;

std::string read_bundle_text(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path))
    throw UserError(path.string() + " does not exist", "pass the bundle.json a run wrote");
  return read_file(path);
}

evidence::Bundle parse_bundle_text(const std::string& text, const std::string& origin) {
  // No NUL bytes, no duplicate keys, nesting within bounds: one reading for every reader.
  auto j = experiment::parse_json_strict(text, origin);
  try {
    return evidence::from_json(j);
  } catch (const json::exception& err) {
    throw UserError(origin + " is not a ksandwich bundle: " + err.what(),
                    "check it is the bundle.json of a run (ksandwich validate says more)");
  }
}

evidence::Bundle load_bundle(const std::filesystem::path& path) {
  return parse_bundle_text(read_bundle_text(path), path.string());
}

evidence::Analysis analyze_bundle(const experiment::Experiment& e, const evidence::Bundle& b) {
  analysis::Options opts;
  opts.scheme = e.scheme;
  opts.drift_bound_pct = e.gates.drift_bound_pct;
  opts.material_pct = e.gates.material_pct;
  opts.seed = e.seed;
  // A confirm run looks after each block up to the blocks it planned (sizing may have
  // changed them from the experiment's).
  opts.min_blocks = static_cast<int>(e.min_blocks);
  auto planned = b.plan.is_object() ? b.plan.value("blocks", json()) : json();
  opts.max_blocks = static_cast<int>(e.blocks);
  if (planned.is_number_integer()) {
    auto blocks = planned.get<int64_t>();
    if (blocks < 1 || blocks > static_cast<int64_t>(experiment::bounds::kMaxSequentialBlocks))
      throw UserError("the bundle's plan.blocks (" + std::to_string(blocks) + ") is out of range",
                      "a run plans 1 to " + std::to_string(experiment::bounds::kMaxSequentialBlocks) + " blocks; check the bundle");
    opts.max_blocks = static_cast<int>(blocks);
  }
  // The calibrated spread each workload was sized with (run's sizing record) sets its MDE.
  auto sizing = b.extra.is_object() ? b.extra.value("sizing", json()) : json();
  if (sizing.is_object() && sizing.value("workloads", json()).is_array())
    for (auto& w : sizing["workloads"])
      if (w.value("sd_block_log_ratio_pct", json()).is_number())
        opts.calibrated_sd_log_ratio[w.value("workload", "")] = w["sd_block_log_ratio_pct"].get<double>() / 100;
  std::vector<analysis::WorkloadSpec> specs;
  for (auto& w : e.workloads) specs.push_back({w.id(), w.metric(), w.higher_is_better()});
  // Point-level gates: the kernel stayed healthy and the patch was exercised.
  std::vector<evidence::Gate> point_gates;
  for (auto& p : b.points) {
    if (p.status != "ok") continue;
    for (auto& g : trace::health_gates(p.id, p.health)) point_gates.push_back(g);
    if (p.direct_hit.is_array() && !p.direct_hit.empty())
      for (auto& g : trace::direct_hit_gates(p.id, p.direct_hit)) point_gates.push_back(g);
  }
  // The kernels differ by the patch and nothing else, or the comparison is not fair.
  if (auto g = matched_build_gate(b.builds)) point_gates.push_back(*g);
  return analysis::analyze(b.points, b.rows, specs, opts, point_gates);
}

}  // namespace ks::pipeline

#include "pipeline/bundle_file.hpp"

#include "experiment/strict_json.hpp"
#include "pipeline/kernels.hpp"

#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <fmt/format.h>
#include <map>
#include <set>
#include <tuple>

#include "analysis/analyze.hpp"
#include "proc/runner.hpp"
#include "trace/direct_hit.hpp"
#include "trace/kernel_log.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"

namespace ks::pipeline {
namespace {

using nlohmann::json;

bool close_enough(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)});
}

// jsonschema from Debian's python3-jsonschema (draft 2020-12). Prints one problem a line.
constexpr const char* kSchemaCheck = R"PY(
import json, sys
try:
    import jsonschema
except ImportError:
    print("python3-jsonschema is not installed (apt-get install python3-jsonschema)")
    sys.exit(3)
schema = json.load(open(sys.argv[1]))
doc = json.load(open(sys.argv[2]))
validator = jsonschema.Draft202012Validator(schema)
errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
for e in errors:
    print("schema: /" + "/".join(str(p) for p in e.absolute_path) + ": " + e.message[:300])
sys.exit(1 if errors else 0)
)PY";

std::vector<std::string> check_schema(const std::filesystem::path& path,
                                      const std::filesystem::path& schema) {
  // Debian's interpreter, where python3-jsonschema lives (a pyenv python may shadow it).
  std::string python = std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  auto r = proc::run(proc::command({python, "-c", kSchemaCheck, schema.string(), path.string()},
                      std::chrono::seconds(60)));
  if (r.exit_code == 3 || !proc::have_program(python))
    throw UserError("cannot check the schema: " + trim(r.out), "apt-get install python3-jsonschema");
  std::vector<std::string> problems;
  for (auto& line : split(r.out, '\n'))
    if (!trim(line).empty()) problems.push_back(trim(line));
  if (!r.ok() && problems.empty()) problems.push_back("schema check failed: " + r.describe());
  return problems;
}

// A bundle is a few MiB at most; a "bundle" that inflates beyond this is not one.
constexpr size_t kMaxInflated = size_t(1) << 30;

std::string gunzip(const std::string& data, const std::filesystem::path& path) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) throw std::runtime_error("zlib: inflateInit2 failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buffer[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - z.avail_out);
    bool stuck = rc == Z_BUF_ERROR && z.avail_in == 0;  // the file ended mid-stream
    if ((rc != Z_OK && rc != Z_STREAM_END) || stuck || out.size() > kMaxInflated) {
      inflateEnd(&z);
      throw UserError(path.string() + " is not a whole gzip file" + (z.msg ? std::string(": ") + z.msg : ""),
                      "copy the bundle.json.gz again (or pass the bundle.json beside it)");
    }
  }
  inflateEnd(&z);
  return out;
}

}  // namespace

bool is_gzip(std::string_view data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

std::string read_bundle_text(const std::filesystem::path& path, bool* compressed) {
  if (!std::filesystem::exists(path))
    throw UserError(path.string() + " does not exist", "pass the bundle.json (or bundle.json.gz) a run wrote");
  auto data = read_file(path);
  if (compressed) *compressed = is_gzip(data);
  return is_gzip(data) ? gunzip(data, path) : data;
}

void write_compressed_bundle(const std::filesystem::path& path, const std::string& text) {
  z_stream z{};
  // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
  if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("zlib: deflateInit2 failed");
  std::string out(deflateBound(&z, text.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("zlib: deflate did not finish");
  write_file_atomic(path, out);
}

std::optional<report::Attachment> bundle_attachment(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  return report::Attachment{path.filename().string(), std::filesystem::file_size(path), sha256_file(path)};
}

evidence::Bundle load_bundle(const std::filesystem::path& path) {
  auto text = read_bundle_text(path);
  experiment::check_json_text(text, path.string());  // no NUL bytes, nesting within bounds
  try {
    return evidence::from_json(json::parse(text));
  } catch (const json::exception& err) {
    throw UserError(path.string() + " is not a ksandwich bundle: " + err.what(),
                    "check it is the bundle.json of a run (ksandwich validate says more)");
  }
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

std::vector<std::string> check_arithmetic(const evidence::Bundle& b) {
  std::vector<std::string> problems;
  std::map<int, std::string> arm_of;
  for (auto& p : b.points)
    if (!arm_of.emplace(p.id, p.arm).second) problems.push_back(fmt::format("point id {} appears twice", p.id));
  for (size_t i = 0; i < b.rows.size(); ++i) {
    auto& r = b.rows[i];
    auto where = fmt::format("rows/{}", i);
    if (!arm_of.count(r.point)) problems.push_back(where + ": names point " + std::to_string(r.point) + " which does not exist");
    else if (arm_of[r.point] != r.arm) problems.push_back(where + ": arm " + r.arm + " but point " + std::to_string(r.point) + " ran " + arm_of[r.point]);
    if (r.ns_per_op && r.ops > 0 && !close_enough(*r.ns_per_op, double(r.elapsed_ns) / double(r.ops)) &&
        std::fabs(*r.ns_per_op - double(r.elapsed_ns) / double(r.ops)) > 1e-3)
      problems.push_back(fmt::format("{}: ns_per_op {} is not elapsed_ns / ops = {}", where, *r.ns_per_op,
                                     double(r.elapsed_ns) / double(r.ops)));
  }
  if (!b.analysis) {
    problems.push_back("analysis: missing");
    return problems;
  }
  if (b.verdict != b.analysis->verdict)
    problems.push_back("verdict " + b.verdict + " differs from analysis.verdict " + b.analysis->verdict);
  experiment::Experiment e;
  try {
    e = experiment::parse(b.experiment);
  } catch (const UserError& err) {
    problems.push_back(std::string("experiment: ") + err.what());
    return problems;
  }
  auto again = analyze_bundle(e, b);
  if (again.verdict != b.analysis->verdict)
    problems.push_back("analysis.verdict " + b.analysis->verdict + " but the rows give " + again.verdict);
  for (auto& w : again.workloads) {
    auto it = std::find_if(b.analysis->workloads.begin(), b.analysis->workloads.end(),
                           [&](auto& x) { return x.workload == w.workload; });
    if (it == b.analysis->workloads.end()) {
      problems.push_back("analysis.workloads: " + w.workload + " is missing");
      continue;
    }
    for (auto [name, stored, computed] :
         {std::tuple{"control_a", it->control_a, w.control_a}, {"patched", it->patched, w.patched},
          {"control_b", it->control_b, w.control_b}, {"control_midpoint", it->control_midpoint, w.control_midpoint},
          {"delta_pct", it->delta_pct, w.delta_pct}, {"drift_pct", it->drift_pct, w.drift_pct}})
      if (!close_enough(stored, computed))
        problems.push_back(fmt::format("analysis.workloads[{}].{} is {} but the rows give {}", w.workload,
                                       name, stored, computed));
    if (it->verdict != w.verdict)
      problems.push_back(fmt::format("analysis.workloads[{}].verdict is {} but the rows give {}", w.workload,
                                     it->verdict, w.verdict));
    if (w.ratio_ci && it->ratio_ci &&
        (!close_enough(w.ratio_ci->low, it->ratio_ci->low) || !close_enough(w.ratio_ci->high, it->ratio_ci->high)))
      problems.push_back(fmt::format("analysis.workloads[{}].ratio_ci does not recompute", w.workload));
  }
  return problems;
}

std::vector<std::string> validate_bundle_file(const std::filesystem::path& path,
                                              const std::filesystem::path& schema_dir) {
  bool compressed = false;
  auto text = read_bundle_text(path, &compressed);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& err) {
    return {std::string("not valid JSON: ") + err.what()};
  }
  // The schema checker reads a file: a compressed bundle is checked as its plain text.
  std::optional<ScopedDir> plain;
  auto checked = path;
  if (compressed) {
    plain.emplace(std::filesystem::temp_directory_path() / fmt::format("ksandwich-validate-{}", getpid()));
    checked = plain->path() / "bundle.json";
    write_file_atomic(checked, text);
  }
  auto problems = check_schema(checked, schema_dir / "bundle.schema.json");
  if (!problems.empty()) return problems;  // the arithmetic needs the shape to be right
  evidence::Bundle b;
  try {
    b = evidence::from_json(j);
  } catch (const json::exception& err) {
    return {std::string("shape: ") + err.what()};
  }
  return check_arithmetic(b);
}

}  // namespace ks::pipeline

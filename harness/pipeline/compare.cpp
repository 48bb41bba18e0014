#include "pipeline/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "analysis/analyze.hpp"
#include "evidence/clock.hpp"
#include "experiment/backends.hpp"
#include "experiment/experiment.hpp"
#include "pipeline/bundle_file.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"

namespace ks::pipeline {
namespace {

using analysis::WorkloadSpec;

// The workloads E ran, as its run judged them: from the experiment, never from the analysis
// stored beside it (thirty-fourth attack: an analysis that called a 50% slower time per op
// an improvement; thirty-seventh: one that left out a workload, which went unjudged).
std::vector<WorkloadSpec> specs_of(const experiment::Experiment& e) {
  std::vector<WorkloadSpec> specs;
  for (auto& w : e.workloads) specs.push_back({w.id(), w.metric(), w.higher_is_better()});
  return specs;
}

// Appends the chosen arm's finished points of SOURCE, relabelled as ROLE, with fresh ids.
void take_points(const evidence::Bundle& source, const std::string& arm, const std::string& role,
                 evidence::Bundle& into) {
  std::map<int, int> new_id;
  for (auto& p : source.points) {
    if (p.status != "ok" || (arm != "all" && p.arm != arm)) continue;
    evidence::Point q = p;
    q.id = static_cast<int>(into.points.size());
    q.block = q.id;
    q.arm = role;
    new_id[p.id] = q.id;
    into.points.push_back(q);
  }
  for (auto& r : source.rows) {
    auto it = new_id.find(r.point);
    if (it == new_id.end()) continue;
    evidence::Row row = r;
    row.point = it->second;
    row.block = it->second;
    row.arm = role;
    into.rows.push_back(row);
  }
}

// A JSON scalar at POINTER as text; "" when absent, null or not a scalar.
std::string text_at(const nlohmann::json& j, const char* pointer) {
  auto ptr = nlohmann::json::json_pointer(pointer);
  if (!j.is_object() || !j.contains(ptr)) return "";
  auto& v = j.at(ptr);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number() || v.is_boolean()) return v.dump();
  return "";
}

// The experiment B ran, read again: what each workload did is in it.
experiment::Experiment experiment_of(const evidence::Bundle& b, const std::string& which) {
  try {
    return experiment::parse(b.experiment);
  } catch (const UserError& err) {
    throw UserError(which + " bundle's experiment cannot be read, so what its workloads did is unknown: " + err.what(),
                    "compare bundles written by `ksandwich run`");
  }
}

// What one workload's rounds do, term by term, on what storage, and what the compared arms
// set besides their kernels: two runs compare where each did the same.
std::vector<std::pair<std::string, std::string>> work_of(const experiment::Experiment& e, const experiment::Workload& w,
                                                         const std::string& compared_arm) {
  auto n = [](uint64_t v) { return std::to_string(v); };
  std::vector<std::pair<std::string, std::string>> terms = {
      {"workload", w.name},          {"ops", n(w.ops)},           {"range_bytes", n(w.range_bytes)},
      {"iodepth", n(w.iodepth)},     {"jobs", n(w.jobs)},         {"file_size_mib", n(w.file_size_mib)},
      {"runtime_s", fmt::format("{:g}", w.runtime_s)},            {"ios", n(w.ios)},
      {"block_kib", n(w.block_kib)}, {"size_mib", n(w.size_mib)}, {"job", w.fio_job},
      {"storage", e.storage.kind + " " + n(e.storage.size_mib) + " MiB"},
      {"mkfs options", join(e.storage.mkfs_options, " ")}, {"mount options", join(e.storage.mount_options, ",")}};
  // On the host backend these are all that tells the arms apart (thirty-seventh attack).
  for (const std::string arm : {"control", "patched"}) {
    if (compared_arm != "all" && compared_arm != arm) continue;
    auto it = e.arms.find(arm);
    const experiment::Arm none;
    const auto& a = it == e.arms.end() ? none : it->second;
    std::string sysfs;
    for (auto& [knob, value] : a.sysfs) sysfs += knob + "=" + value + " ";
    terms.insert(terms.end(), {{arm + " mkfs options", join(a.extra_mkfs_options, " ")},
                               {arm + " mount options", join(a.extra_mount_options, ",")},
                               {arm + " sysfs", sysfs},
                               {arm + " kernel command line", join(a.cmdline, " ")}});
  }
  return terms;
}

// Refuses a workload that did other work in A than in B (thirty-sixth attack: 4 KiB clones
// against 1 MiB ones, "IMPROVEMENT -66.6%", exit 0). Both hold every workload of SPECS.
void require_same_work(const experiment::Experiment& a, const experiment::Experiment& b,
                       const std::vector<analysis::WorkloadSpec>& specs, const std::string& compared_arm) {
  auto find = [](const experiment::Experiment& e, const std::string& id) {
    return *std::find_if(e.workloads.begin(), e.workloads.end(), [&](auto& w) { return w.id() == id; });
  };
  for (auto& s : specs) {
    std::vector<std::string> differ;
    auto wa = work_of(a, find(a, s.id), compared_arm), wb = work_of(b, find(b, s.id), compared_arm);
    for (size_t i = 0; i < wa.size(); ++i)
      if (wa[i].second != wb[i].second)
        differ.push_back(one_line(wa[i].first + " '" + wa[i].second + "' in A, '" + wb[i].second + "' in B"));
    if (!differ.empty())
      throw UserError("workload '" + s.id + "' did other work in the two runs: " + join(differ, "; "),
                      "compare runs of the same workloads; a changed workload starts its history again");
  }
}

// Refuses a run with a workload INVALID judged alone, whichever arm is compared: its data are
// not evidence (thirty-sixth attack: a patched kernel that oopsed was INVALID alone and an
// IMPROVEMENT compared; thirty-seventh and thirty-eighth: so were a control kernel that
// oopsed and control rows with unexpected results, compared by the patched arm; forty-first:
// a failed round of one workload behind another's REGRESSION, which outranks INVALID).
void require_valid_alone(const experiment::Experiment& e, const evidence::Bundle& b, const std::string& which) {
  const auto alone = analyze_bundle(e, b);
  if (alone.verdict != "INVALID" &&
      std::none_of(alone.workloads.begin(), alone.workloads.end(), [](auto& w) { return w.verdict == "INVALID"; }))
    return;
  std::vector<std::string> failed;
  for (auto& g : alone.gates)
    if (!g.passed && std::find(failed.begin(), failed.end(), g.name) == failed.end()) failed.push_back(g.name);
  throw UserError(which + " bundle is INVALID judged alone (failed gates: " + join(failed, ", ") +
                      "): it has no verdict to compare",
                  "`ksandwich analyze` on it says what failed; compare runs whose data are evidence");
}

}  // namespace

std::vector<EnvironmentFact> environment_of(const evidence::Bundle& b, const std::string& arm) {
  std::string memory;
  if (b.machine.is_object() && b.machine.contains("memory_mib") && b.machine["memory_mib"].is_number())
    memory = fmt::format("{:.0f} GiB", b.machine["memory_mib"].get<double>() / 1024);
  std::string accelerator = text_at(b.machine, "/accelerator/used");
  if (accelerator.empty()) accelerator = text_at(b.machine, "/virtualization");
  std::string version = text_at(b.tool, "/version");
  std::vector<EnvironmentFact> facts = {
      {"CPU model", text_at(b.machine, "/cpu_model"), true},
      {"cores", text_at(b.machine, "/cores"), true},
      {"memory", memory, true},
      {"backend", b.backend, false},
      {"accelerator", accelerator, false},
  };
  // The kernel the points ran: the builds' configs where the backend boots them, else the one
  // running; the storage each arm's points had (an experiment's "auto" is each machine's kind);
  // the host's clock (sixty-seventh attack: host runs of two kernels and two storage kinds were
  // compared, and drawn as one series, without a word).
  const auto& backends = experiment::backend_table();
  const auto rules = std::find_if(backends.begin(), backends.end(), [&](auto& r) { return r.name == b.backend; });
  if (rules != backends.end() && !rules->boots_kernels)
    facts.push_back({"running kernel", text_at(b.machine, "/kernel_release"), false});
  facts.push_back({"clocksource", text_at(b.machine, "/clocksource"), false});
  for (std::string a : {"control", "patched"})
    if (arm == "all" || arm == a) {
      facts.push_back({"kernel config (" + a + ")", text_at(b.builds, ("/" + a + "/config/sha256").c_str()), false});
      std::string storage;
      for (auto& p : b.points)
        if (p.arm == a && p.status == "ok" && storage.empty()) storage = text_at(p.storage, "/kind");
      facts.push_back({"storage (" + a + ")", storage, false});
    }
  facts.push_back({"tool major version", version.substr(0, version.find('.')), false});
  return facts;
}

std::vector<EnvironmentChange> environment_changes(const evidence::Bundle& before, const evidence::Bundle& after,
                                                   const std::string& arm) {
  auto a = environment_of(before, arm), b = environment_of(after, arm);
  std::vector<EnvironmentChange> changes;
  // A fact one run does not record is no match (sixty-sixth attack: a bundle without its
  // machine's CPU, cores and memory compared with any machine's without a word).
  auto shown = [](const std::string& value) { return value.empty() ? std::string("(not recorded)") : value; };
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].value != b[i].value) changes.push_back({a[i].name, shown(a[i].value), shown(b[i].value)});
  return changes;
}

std::string machine_fingerprint(const evidence::Bundle& b) {
  std::string facts;
  for (auto& f : environment_of(b, "all"))
    if (f.machine) facts += f.name + "=" + f.value + "\n";
  return sha256_hex(facts).substr(0, 16);
}

evidence::Bundle compare_bundles(const evidence::Bundle& before, const evidence::Bundle& after,
                                 const CompareOptions& o) {
  using evidence::material_pct_of;
  if (!o.material_pct && material_pct_of(before) != material_pct_of(after))
    throw UserError(fmt::format("the runs were judged with different material thresholds: {:g}% in A, {:g}% in B",
                                material_pct_of(before), material_pct_of(after)),
                    "say which one compare should use with --material-pct");
  const double material_pct = o.material_pct.value_or(material_pct_of(after));
  // Only finished runs with every point measured: compare takes the ok points, and a patched
  // kernel that failed a point, or a run cut short, passed the gate with exit 0 (thirty-fifth
  // attack; alone, that run is INVALID, or unfinished).
  for (auto [b, which] : {std::pair{&before, "the first"}, std::pair{&after, "the second"}}) {
    const auto failed = std::count_if(b->points.begin(), b->points.end(), [](auto& p) { return p.status == "failed"; });
    if (evidence::pending_points(*b) > 0 || failed > 0)
      throw UserError(fmt::format("{} bundle is a run with {} point(s) {}: it has no verdict to compare", which,
                                  failed > 0 ? failed : static_cast<long>(evidence::pending_points(*b)),
                                  failed > 0 ? "failed" : "not run"),
                      "compare runs whose every point ran; `ksandwich report` shows what happened to this one");
  }
  const auto experiment_a = experiment_of(before, "the first"), experiment_b = experiment_of(after, "the second");
  auto specs = specs_of(experiment_a);
  auto after_specs = specs_of(experiment_b);
  for (auto& s : specs) {
    auto it = std::find_if(after_specs.begin(), after_specs.end(), [&](auto& a) { return a.id == s.id; });
    if (it == after_specs.end())
      throw UserError("workload '" + s.id + "' is in the first bundle but not in the second",
                      "compare bundles of the same experiment");
    if (it->metric != s.metric)
      throw UserError(fmt::format("workload '{}' is measured in {} in one bundle and {} in the other", s.id,
                                  s.metric, it->metric));
  }
  // And the other way (thirty-fourth attack: a workload added to the experiment, regressing,
  // was never judged, and compare said NO_CHANGE, exit 0).
  for (auto& a : after_specs)
    if (std::none_of(specs.begin(), specs.end(), [&](auto& s) { return s.id == a.id; }))
      throw UserError("workload '" + a.id + "' is in the second bundle but not in the first, and would go unjudged",
                      "compare bundles of the same experiment");
  require_same_work(experiment_a, experiment_b, specs, o.arm);

  // Instructions and nanoseconds are not one quantity: no flag compares them.
  const auto& clock_a = evidence::bundle_clock(before);
  const auto& clock_b = evidence::bundle_clock(after);
  if (clock_a.name != clock_b.name)
    throw UserError("the bundles were measured with different clocks: " + clock_a.name + " (" + clock_a.measures +
                        ") in A, " + clock_b.name + " (" + clock_b.measures + ") in B",
                    "compare two runs measured with the same clock (the experiment's \"clock\" and the "
                    "accelerator decide it; see machine.clock in each bundle)");
  auto changes = environment_changes(before, after, o.arm);
  std::vector<std::string> lines;
  for (auto& ch : changes)
    lines.push_back(one_line(fmt::format("{}: '{}' in A, '{}' in B", ch.name, ch.before, ch.after)));
  if (!changes.empty() && !o.allow_environment_change)
    throw UserError("the bundles were not measured in the same environment: " + join(lines, "; "),
                    "compare runs of one machine, backend, accelerator, kernel (its config, or the one "
                    "running), clocksource, storage and tool major version; --allow-environment-change "
                    "compares anyway and lists the differences at the top of the report");

  // Two copies of one bundle (bundle.json and its .gz, or a file copied) would read as a
  // comparison and find no change. Two runs are not started in one second with every
  // round alike (even the instruction clock's rounds differ in their last digits).
  if (before.created_at == after.created_at && before.rows == after.rows)
    throw UserError("A and B are one run (both created at " + before.created_at +
                        ", every round alike): a run compared with itself shows nothing",
                    "pass two different runs, e.g. last night's bundle and tonight's");

  require_valid_alone(experiment_a, before, "the first");
  require_valid_alone(experiment_b, after, "the second");

  evidence::Bundle c;
  if (!changes.empty()) c.extra["environment_changes"] = changes;
  c.tool = after.tool;
  c.created_at = after.created_at;
  c.experiment_name = fmt::format("compare: {} ({}) vs {} ({})", before.experiment_name, before.created_at,
                                  after.experiment_name, after.created_at);
  c.experiment = {{"compare",
                   {{"before", before.experiment}, {"after", after.experiment}, {"arm", o.arm}, {"material_pct", material_pct}}}};
  c.backend = after.backend;
  c.machine = after.machine;
  take_points(before, o.arm, "control", c);
  take_points(after, o.arm, "patched", c);
  if (c.points.empty() || std::none_of(c.points.begin(), c.points.end(), [](auto& p) { return p.arm == "patched"; }) ||
      std::none_of(c.points.begin(), c.points.end(), [](auto& p) { return p.arm == "control"; }))
    throw UserError("one of the bundles has no finished point of the arm '" + o.arm + "'",
                    "choose another arm with --arm control|patched|all");
  c.plan = {{"scheme", "confirm"}, {"compare_arm", o.arm}, {"points", nlohmann::json::array()},
            {"rounds", before.plan.value("rounds", 0)}, {"warmup_rounds", before.plan.value("warmup_rounds", 0)},
            {"seed", o.seed}};
  for (auto& p : c.points) c.plan["points"].push_back({{"point", p.id}, {"block", p.block}, {"arm", p.arm}});

  analysis::Options opts;
  opts.scheme = "compare";  // two runs: two independent arms, no blocks to pair
  opts.material_pct = material_pct;
  opts.seed = o.seed;
  opts.resolution_sd_log_ratio = clock_b.resolution_sd_log_ratio;
  c.analysis = analysis::analyze(c.points, c.rows, specs, opts);
  c.verdict = c.analysis->verdict;
  return c;
}

}  // namespace ks::pipeline

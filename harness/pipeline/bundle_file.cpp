#include "pipeline/bundle_file.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>

#include "experiment/backends.hpp"
#include "experiment/experiment.hpp"
#include "experiment/strict_json.hpp"
#include "pipeline/kernels.hpp"

#include "analysis/analyze.hpp"
#include "analysis/gate_kind.hpp"
#include "boot/backend.hpp"
#include "evidence/clock.hpp"
#include "trace/direct_hit.hpp"
#include "trace/kernel_log.hpp"
#include "trace/profile.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/ownership.hpp"
#include "util/hash.hpp"

namespace ks::pipeline {

using nlohmann::json;

namespace {

// Reading a bundle costs about 0.4 s and 20 MB a MiB (the schema check, the analysis): a
// gzip inflating to 57 MB took 23 s and 1 GB (thirteenth attack).
constexpr size_t kMaxInflated = size_t(16) << 20;

// Five times the points a run plans: room to spare, none for a bomb.
constexpr size_t kMaxPoints = 5 * experiment::bounds::kMaxOrder;

constexpr const char* kNotABundleHint = "check it is the bundle.json of a run (ksandwich validate says more)";

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
    if (out.size() > kMaxInflated) {
      inflateEnd(&z);
      throw UserError(path.string() + " inflates to more than " + std::to_string(kMaxInflated >> 20) +
                          " MiB: no bundle is that large",
                      "pass the bundle.json.gz a run wrote, or the bundle.json beside it");
    }
    if ((rc != Z_OK && rc != Z_STREAM_END) || stuck) {
      inflateEnd(&z);
      throw UserError(path.string() + " is not a whole gzip file" + (z.msg ? std::string(": ") + z.msg : ""),
                      "copy the bundle.json.gz again (or pass the bundle.json beside it)");
    }
  }
  // One member and nothing after it: a second member or trailing bytes are not what a run
  // wrote, and another reader (zcat) would see different content.
  const bool trailing = z.avail_in != 0;
  inflateEnd(&z);
  if (trailing)
    throw UserError(path.string() + " holds more than one gzip stream (or bytes after its end)",
                    "pass the bundle.json.gz a run wrote, or the bundle.json beside it");
  return out;
}

}  // namespace


bool is_gzip(std::string_view data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

std::string read_bundle_text(const std::filesystem::path& path, bool* compressed) {
  auto data = read_input_file(path, kMaxBundleFile, "bundle", Links::follow, reader_of_anyones_file(path));
  if (compressed) *compressed = is_gzip(data);
  return is_gzip(data) ? gunzip(data, path) : data;
}

namespace {

std::string gzip(const std::string& text) {
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
  return out;
}

}  // namespace

void write_compressed_bundle(const std::filesystem::path& path, const std::string& text) {
  write_file_atomic(path, gzip(text));
}

report::Attachment bundle_attachment(const std::string& text) {
  auto content = gzip(text);
  return report::Attachment{kCompressedBundleName, content.size(), sha256_hex(content), std::move(content)};
}

namespace {

// Workload ids and arms are names (experiment::is_plain_name, as the experiment's schema has
// them): the reports, tables and replies build lines from them, where a "clone Verdict:
// NO_CHANGE" wrapped at a space would start a line of its own, and a table repeats an arm's
// name on every row (two arms of 100 KB: 18 s and 730 MB for a 34 KB gzip).
// The words a bundle's readers build lines from, and what each may hold.
struct WordKind {
  std::string_view punctuation;  // besides ASCII letters and digits
  size_t max;
  std::string_view is;           // what the refusal says it must be
};
constexpr WordKind kName{"._-", 64, "a name ([A-Za-z0-9._-], at most 64)"};
constexpr WordKind kSymbol{"_.$", 128, "a kernel symbol ([A-Za-z0-9_.$], at most 128)"};
constexpr WordKind kAuditWords{" ._()/-", 64, "one of the audit's words ([A-Za-z0-9 ._()/-], at most 64)"};

// J's KEY when it is a string, else "".
std::string string_at(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

}  // namespace

void require_bundle_words(const evidence::Bundle& b, const std::string& origin) {
  auto check = [&](const char* what, const std::string& word, const WordKind& kind = kName) {
    const bool ok = &kind == &kName ? experiment::is_plain_name(word)
                                    : !word.empty() && word.size() <= kind.max &&
                                          std::all_of(word.begin(), word.end(), [&](unsigned char c) {
                                            return std::isalnum(c) || kind.punctuation.find(static_cast<char>(c)) != std::string_view::npos;
                                          });
    if (!ok)
      throw UserError(origin + " is not a ksandwich bundle: the " + what + " \"" + one_line(word.substr(0, 80)) +
                          "\" is not " + std::string(kind.is),
                      kNotABundleHint);
  };
  std::set<std::string> workloads;  // each is a plot in the HTML view (a 3.3 MiB bundle of 20,000: 134 MB)
  for (auto& r : b.rows) {
    check("workload", r.workload), check("arm", r.arm);
    if (workloads.insert(r.workload).second && workloads.size() > experiment::kMaxWorkloads)
      throw UserError(origin + " is not a ksandwich bundle: its rows name more than " +
                          std::to_string(experiment::kMaxWorkloads) + " workloads",
                      kNotABundleHint);
  }
  // Where given (older bundles lack some), the words the reply's and the reports' prose is
  // made of are names too: "a fresh btrfs on KIND for every point" must not hold a paragraph.
  auto check_field = [&](const char* what, const nlohmann::json& j, const char* key) {
    if (j.is_object() && j.contains(key) && j[key].is_string()) check(what, j[key].get<std::string>());
  };
  // A run makes at most experiment::bounds::kMaxOrder points; the analysis pairs every point of
  // one arm with every point of the other (30,000 points: 88 s and 3.7 GB, nineteenth attack).
  if (b.points.size() > kMaxPoints)
    throw UserError(origin + " is not a ksandwich bundle: it holds " + std::to_string(b.points.size()) +
                        " points, and a run makes at most " + std::to_string(experiment::bounds::kMaxOrder),
                    kNotABundleHint);
  for (auto& p : b.points) {
    check("arm", p.arm), check_field("storage kind", p.storage, "kind");
    // A profile's functions are kernel symbols: a table row starts with one (twentieth attack:
    // "dedupe: patched vs control: ... REGRESSION" as a function name).
    if (p.profile.is_array())
      for (auto& w : p.profile)
        if (w.is_object() && w.contains("functions") && w["functions"].is_array()) {
          // As many as a run keeps, the rest counted in left_out (forty-fourth attack: 1,850 a
          // point of 200 cost each reader 30 s, the profiles compared name by name).
          if (w["functions"].size() > trace::kProfileKeep)
            throw UserError(origin + " is not a ksandwich bundle: point " + std::to_string(p.id) + " profiles " +
                                std::to_string(w["functions"].size()) + " functions, and a run keeps at most " +
                                std::to_string(trace::kProfileKeep),
                            kNotABundleHint);
          for (auto& f : w["functions"]) check("profiled function", string_at(f, "function"), kSymbol);
        }
  }
  // The plan's order is arms, at most as many as a run makes (twentieth attack: a sentence as an
  // arm of the reply's "(control -> patched)", 3.9 million of them in 15 MB).
  if (b.plan.is_object() && b.plan.contains("order") && b.plan["order"].is_array()) {
    if (b.plan["order"].size() > kMaxPoints)
      throw UserError(origin + " is not a ksandwich bundle: its plan orders more than " + std::to_string(kMaxPoints) + " points",
                      kNotABundleHint);
    for (auto& arm : b.plan["order"])
      if (arm.is_string()) check("arm", arm.get<std::string>());
  }
  // An audit row's field is the audit's own words ("source version", "config SHA-256
  // (normalized)"): no colon, which would make its line read as another (nineteenth attack).
  if (b.builds.is_object() && b.builds.contains("audit") && b.builds["audit"].is_array())
    for (auto& row : b.builds["audit"])
      if (auto field = string_at(row, "field"); !field.empty()) check("audit field", field, kAuditWords);
  if (b.analysis) {
    for (auto& w : b.analysis->workloads) check("workload", w.workload);
    for (auto& g : b.analysis->gates)
      if (!analysis::gate_kind(g.name)) check("gate", g.name);  // "matched builds", or another tool's name
  }
  for (const char* key : {"control_arm", "patched_arm"}) check_field("arm", b.plan, key);
  check_field("experiment name", b.experiment, "name");
  if (!b.experiment_name.empty()) check("experiment name", b.experiment_name);
  if (!b.backend.empty()) check("backend", b.backend);
}

evidence::Bundle parse_bundle_text(const std::string& text, const std::string& origin) {
  // No NUL bytes, no duplicate keys, nesting within bounds: one reading for every reader.
  auto j = experiment::parse_json_strict(text, origin);
  evidence::Bundle bundle;
  try {
    bundle = evidence::from_json(j);
  } catch (const json::exception& err) {
    throw UserError(origin + " is not a ksandwich bundle: " + one_line(experiment::json_error_text(err)),
                    kNotABundleHint);
  }
  require_bundle_words(bundle, origin);
  return bundle;
}

evidence::Bundle load_bundle(const std::filesystem::path& path) {
  return parse_bundle_text(read_bundle_text(path), path.string());
}

namespace {

// What to do about a bundle whose parts do not fit together.
constexpr const char* kEditedHint = "the bundle was edited; `ksandwich validate` on the run's own bundle.json";

// Where the two builds are not the kernels E's arms name or the points booted (sixty-third
// and sixty-fourth attacks: a patched build holding no patch, or a control holding the patch,
// of another source kind, one kernel twice, and points that booted another kernel than their
// arm's, or named none, validated): one sentence each, none where they fit.
//
// Each build is its arm's: its source of E's kind; its config of E's base and fragments (by
// file name); a commit only where its arm names one, whose diff is its first patches; then the
// patch files its arm names, by name and in order, each whole (its patches numbered 1 to their
// count). The two images differ, and every finished point names the release of its arm's.
std::vector<std::string> builds_unlike_arms(const experiment::Experiment& e, const std::vector<evidence::Point>& points,
                                            const nlohmann::json& builds) {
  using nlohmann::json;
  std::vector<std::string> out;
  auto text = [](const json& v) { return v.get<std::string>(); };
  auto fragment_name = [](const std::string& path) {  // a fragment may be named without ".config"
    auto name = std::filesystem::path(path).filename().string();
    return name.ends_with(".config") ? name.substr(0, name.size() - 7) : name;
  };
  std::vector<std::string> wanted_fragments;
  for (auto& f : e.config.fragments) wanted_fragments.push_back(fragment_name(f));
  // A base file is known by its content alone (a cached kernel serves a copy of it by any name).
  const auto wanted_base = e.config.base.empty() ? std::string("tinyconfig") : e.config.base;
  auto base_fits = [&](const std::string& base) {
    return kernel::is_config_target(wanted_base) ? base == wanted_base : !kernel::is_config_target(base);
  };
  for (auto& [arm, spec] : e.arms) {
    const auto& build = builds.at(arm);
    if (text(build.at("arm")) != arm) out.push_back(fmt::format("the {} build is the {} arm's", arm, one_line_cut(text(build.at("arm")))));
    if (auto kind = text(build.at("source").at("kind")); kind != e.source.kind)
      out.push_back(fmt::format("the {} build is of a {} source, the experiment's is {}", arm, one_line_cut(kind), e.source.kind));
    std::vector<std::string> fragments;
    for (auto& f : build.at("config").at("fragments")) fragments.push_back(fragment_name(text(f.at("name"))));
    if (auto base = text(build.at("config").at("base")); !base_fits(base) || fragments != wanted_fragments)
      out.push_back(fmt::format("the {} build's config is {} + [{}], the experiment's {} + [{}]", arm, one_line_cut(base),
                                one_line_cut(join(fragments, ", ")), one_line_cut(wanted_base), one_line_cut(join(wanted_fragments, ", "))));
    const auto& patches = build.at("patches");
    size_t next = 0;
    if (build.contains("commit") != !spec.commit.empty()) {
      out.push_back(spec.commit.empty() ? fmt::format("the {} build is of a commit its arm does not name", arm)
                                        : fmt::format("the {} build names no commit, its arm names {}", arm, spec.commit));
    } else if (!spec.commit.empty()) {
      // By its id: the name is the first build's word (a cached kernel serves each name of it).
      const auto& commit = build.at("commit");
      if (text(commit.at("sha")).empty()) out.push_back(fmt::format("the {} build names no commit id", arm));
      if (auto diff = text(commit.at("file")); !diff.empty())
        while (next < patches.size() && text(patches[next].at("file")) == diff) ++next;
    }
    std::vector<std::string> held, named;
    bool whole = true;
    while (next < patches.size() && whole) {
      const auto file = text(patches[next].at("file"));
      const auto count = patches[next].at("count").get<int64_t>();
      whole = count >= 1 && static_cast<uint64_t>(count) <= patches.size() - next;
      for (int64_t k = 0; whole && k < count; ++k) {
        const auto& p = patches[next + k];
        whole = text(p.at("file")) == file && p.at("index").get<int64_t>() == k + 1 && p.at("count").get<int64_t>() == count;
      }
      held.push_back(std::filesystem::path(file).filename().string());
      next += whole ? count : 0;
    }
    for (auto& file : spec.patches) named.push_back(std::filesystem::path(file).filename().string());
    if (!whole || held != named)
      out.push_back(fmt::format("the {} build holds the patch files [{}]{}, its arm names [{}]", arm, one_line_cut(join(held, ", ")),
                                whole ? "" : " (not whole, or out of order)", one_line_cut(join(named, ", "))));
  }
  // The release names the arm, so two builds of one kernel image are no comparison.
  if (text(builds.at("control").at("bzimage").at("sha256")) == text(builds.at("patched").at("bzimage").at("sha256")))
    out.push_back("the control and patched builds are one kernel image");
  std::string first_unlike;  // the first point that booted another kernel, and how many more did
  int more = 0;
  for (auto& p : points) {
    if (p.status != "ok") continue;
    const auto built = text(builds.at(p.arm).at("kernel_release"));
    const auto reported = p.environment.is_object() ? p.environment.value("kernel_release", p.kernel_release) : p.kernel_release;
    for (auto& booted : {p.kernel_release, reported})
      if (booted != built) {
        if (first_unlike.empty())
          first_unlike = fmt::format("point {} ({}) booted {}, not its arm's build {}", p.id, p.arm,
                                     booted.empty() ? "a kernel it does not name" : one_line_cut(booted), one_line_cut(built));
        else
          ++more;
        break;
      }
  }
  if (!first_unlike.empty()) out.push_back(more ? fmt::format("{} (and {} point(s) more)", first_unlike, more) : first_unlike);
  return out;
}

// The gates a run's kernels answer for besides its rows: each finished point's kernel health
// and the direct hits E requires, and (BUILDS, a bundle's "builds") the two kernels matched,
// a later commit only where E names one.
std::vector<evidence::Gate> kernel_gates(const experiment::Experiment& e, const std::vector<evidence::Point>& points,
                                         const nlohmann::json& builds) {
  // The kernel stayed healthy and the patch was exercised.
  std::vector<evidence::Gate> gates;
  for (auto& p : points) {
    if (p.status != "ok") continue;
    for (auto& g : trace::health_gates(p.id, p.health)) gates.push_back(g);
    std::vector<std::string> required;
    for (auto& t : boot::direct_hit_targets(e, p.arm))
      if (t.required) required.push_back(t.function);
    for (auto& g : trace::direct_hit_gates(p.id, p.direct_hit, required)) gates.push_back(g);
  }
  // The kernels differ by the patch and nothing else, and are the ones the arms name and the
  // points booted, or the comparison is not fair.
  std::string unfit;
  const auto audited = reaudited(builds, experiment::patched_at_later_commit(e), &unfit);
  if (unfit.empty() && builds.is_object() && builds.contains("control") && builds.contains("patched")) {
    try {
      if (auto unlike = builds_unlike_arms(e, points, builds); !unlike.empty())
        unfit = "the builds are not the run's kernels: " + join(unlike, "; ");
    } catch (const std::exception& err) {
      unfit = "the builds cannot be audited: " + one_line(err.what());
    }
  }
  if (!unfit.empty()) {
    gates.push_back(analysis::make_gate(analysis::GateKind::matched_builds, "builds", false, unfit));
    return gates;
  }
  if (auto g = matched_build_gate(audited)) gates.push_back(*g);
  return gates;
}

// Every row is of a point the bundle holds, in its arm and block, and each of E's rounds at
// most once, or the bundle is refused; a round a finished point lacks is a failed round of its
// workload, a failed `semantic` gate (thirty-ninth attack: a failed round's rows deleted
// passed; 20,000 rows of points no bundle has cost readers minutes and gigabytes, and were
// judged).
std::vector<evidence::Gate> check_rows_against_plan(const experiment::Experiment& e, const evidence::Bundle& b) {
  auto refuse = [](const std::string& why) {
    throw UserError("the bundle's rows " + why, kEditedHint);
  };
  std::map<int, const evidence::Point*> point_of;
  for (auto& p : b.points) point_of[p.id] = &p;
  std::map<std::tuple<int, std::string, bool, uint64_t>, int> seen;  // point, workload, warmup, round
  std::map<std::tuple<int, std::string, bool>, uint64_t> held;        // point, workload, warmup: rounds
  for (auto& r : b.rows) {
    auto it = point_of.find(r.point);
    if (it == point_of.end()) refuse("name point " + std::to_string(r.point) + ", which the bundle does not hold");
    if (r.arm != it->second->arm || r.block != it->second->block)
      refuse("of point " + std::to_string(r.point) + " name another arm or block than the point");
    const uint64_t rounds = r.warmup ? e.warmup_rounds : e.rounds;
    if (r.round < 0 || static_cast<uint64_t>(r.round) >= rounds ||
        ++seen[{r.point, r.workload, r.warmup, static_cast<uint64_t>(r.round)}] > 1)
      refuse("of point " + std::to_string(r.point) + " hold " + r.workload + (r.warmup ? " warm-up" : "") + " round " +
             std::to_string(r.round) + " more than once, or one the experiment does not run");
    ++held[{r.point, r.workload, r.warmup}];
  }
  // Counted, not listed: the rounds an experiment asks of each point are anyone's to make
  // billions (forty-second attack: a 3 KB bundle of 200 points and 100,000 rounds without a
  // row cost each reader 8 s and more than a gigabyte).
  std::vector<evidence::Gate> gates;
  for (auto& w : e.workloads) {
    uint64_t missing = 0;
    std::string first;
    for (auto& p : b.points)
      for (bool warmup : {true, false}) {
        const uint64_t rounds = warmup ? e.warmup_rounds : e.rounds;
        const auto it = held.find({p.id, w.id(), warmup});
        const uint64_t lacking = p.status == "ok" ? rounds - (it == held.end() ? 0 : it->second) : 0;
        if (lacking == 0) continue;
        if (first.empty()) {  // its first lacking round: at most one more than the rounds it holds
          uint64_t round = 0;
          while (seen.count({p.id, w.id(), warmup, round})) ++round;
          first = std::string(warmup ? "warm-up " : "") + "round " + std::to_string(round) + " of point " + std::to_string(p.id);
        }
        missing += lacking;
      }
    if (missing > 0)
      gates.push_back(analysis::make_gate(
          analysis::GateKind::semantic, w.id(), false,
          fmt::format("{} round(s) of finished points have no record, first {}: a round without one is a failed round",
                      missing, first)));
  }
  return gates;
}

// The clock the bundle says its rounds were timed with, when its experiment and accelerator
// give the same (fortieth attack: machine.clock "wall" on an instruction-clock run dropped
// the clock's resolution floor, and a +4.97% change within 5% became NO_CHANGE).
const evidence::Clock& clock_of(const experiment::Experiment& e, const evidence::Bundle& b) {
  const auto& said = evidence::bundle_clock(b);
  const evidence::Clock* expected = &evidence::clock_named("wall");
  if (e.backend == "qemu") {
    static const auto used = json::json_pointer("/accelerator/used"), clock = json::json_pointer("/clock");
    const bool known = b.machine.is_object() && b.machine.contains(used) && b.machine[used].is_string() &&
                       b.machine.contains(clock);
    // Asking for instructions is asking for TCG. A bundle from before clocks (or accelerators)
    // were recorded measured wall time, and says nothing else.
    if (e.clock != "instructions" && !known) return said;
    expected = &evidence::qemu_clock(e.clock == "instructions" ? "tcg" : b.machine[used].get<std::string>(), e.clock,
                                     e.qemu.vcpus);
  }
  if (expected->name != said.name)
    throw UserError("the bundle says its rounds were timed in " + said.name + ", but its experiment and accelerator give " +
                        expected->name,
                    kEditedHint);
  return said;
}

// A run that stopped early did so as run() does: at the end of a confirm block from
// min_blocks on, every workload decided (fortieth attack: a failed last block deleted behind a
// stopped.early made exit 3 an INCONCLUSIVE exit 4).
void check_early_stop(const experiment::Experiment& e, const evidence::Bundle& b, const json& plan_points,
                      const evidence::Analysis& a) {
  if (!plan_points.is_array() || b.points.size() >= plan_points.size()) return;
  const bool honest = e.scheme == "confirm" && !b.points.empty() && b.points.back().block + 1 >= static_cast<int>(e.min_blocks) &&
                      plan_points[b.points.size()].value("block", json()) != json(b.points.back().block) &&
                      evidence::pending_points(b) == 0 && evidence::all_decided(a);
  if (!honest)
    throw UserError("the bundle says its run stopped early, every workload decided after " +
                        std::to_string(b.points.back().block + 1) + " block(s), which its own rows do not bear out",
                    kEditedHint);
}

}  // namespace

json plan_json(const experiment::Experiment& e, const std::vector<experiment::PlannedPoint>& plan) {
  json points = json::array();
  for (auto& p : plan) points.push_back({{"point", p.index}, {"block", p.block}, {"arm", p.arm}});
  json workloads = json::array();
  for (auto& w : e.workloads) workloads.push_back(w.id());
  json out{{"scheme", e.scheme},  {"points", points},        {"rounds", e.rounds},
           {"warmup_rounds", e.warmup_rounds}, {"seed", e.seed}, {"blocks", e.blocks},
           {"cpu", e.cpu},        {"workloads", workloads}};
  if (e.replacements > 0) out["replacements"] = e.replacements;  // blocks added for dropped ones
  return out;
}

std::optional<std::string> size_as_planned(const evidence::Bundle& b, experiment::Experiment& e) {
  if (!b.plan.is_object()) return "it has no plan";
  if (e.scheme == "confirm" && b.plan.contains("blocks")) {  // else the experiment's (a bundle before sizing)
    auto blocks = b.plan["blocks"];
    if (!blocks.is_number_unsigned() || blocks.get<uint64_t>() < e.min_blocks || blocks.get<uint64_t>() > e.max_blocks)
      return fmt::format("its plan has {} blocks, outside the experiment's {} to {}", blocks.dump(), e.min_blocks,
                         e.max_blocks);
    e.blocks = blocks.get<uint32_t>();
    auto added = b.plan.value("replacements", json(0u));
    if (!added.is_number_unsigned() || added.get<uint64_t>() > e.replacement_blocks)
      return fmt::format("its plan's replacements ({}) are not 0 to the experiment's replacement_blocks {}",
                         added.dump(), e.replacement_blocks);
    e.replacements = added.get<uint32_t>();
  }
  // The points a run of that size plans (forty-first attack: plan.blocks cut from 6 to 3 behind
  // six blocks' points made an INCONCLUSIVE run NO_CHANGE: "the first 3 decide").
  auto points = b.plan.value("points", json());
  if (!points.is_array()) return std::nullopt;
  const auto planned = plan_json(e, experiment::plan_points(e))["points"];
  if (points != planned)
    return fmt::format("its plan's {} points are not the {} a run of {} blocks plans", points.size(), planned.size(),
                       e.blocks);
  return std::nullopt;
}

evidence::Analysis analyze_bundle(const experiment::Experiment& e, const evidence::Bundle& b) {
  analysis::Options opts;
  opts.scheme = e.scheme;
  opts.drift_bound_pct = e.gates.drift_bound_pct;
  opts.material_pct = e.gates.material_pct;
  opts.seed = e.seed;
  opts.resolution_sd_log_ratio = clock_of(e, b).resolution_sd_log_ratio;
  opts.control_only = e.scheme == "screen" && !e.order.empty() &&
                      std::all_of(e.order.begin(), e.order.end(), [](auto& arm) { return arm == "control"; });
  // A confirm run looks after each block up to the blocks it planned (sizing may have
  // changed them from the experiment's).
  opts.min_blocks = static_cast<int>(e.min_blocks);
  auto sized = e;
  if (auto why = size_as_planned(b, sized)) throw UserError("the bundle is not a run of its experiment: " + *why, kEditedHint);
  opts.max_blocks = static_cast<int>(sized.blocks);
  // The calibrated spread each workload was sized with (run's sizing record) sets its MDE. Only
  // a confirm run is sized (forty-first attack: a sizing record added to a screen bundle gave
  // its one degree of freedom a known spread, and INCONCLUSIVE became NO_CHANGE).
  auto sizing = b.extra.is_object() && e.scheme == "confirm" ? b.extra.value("sizing", json()) : json();
  if (sizing.is_object() && sizing.value("workloads", json()).is_array())
    for (auto& w : sizing["workloads"])
      if (w.is_object() && w.value("sd_block_log_ratio_pct", json()).is_number() && w.value("workload", json()).is_string())
        opts.calibrated_sd_log_ratio[w.value("workload", "")] = w["sd_block_log_ratio_pct"].get<double>() / 100;
  std::vector<analysis::WorkloadSpec> specs;
  for (auto& w : e.workloads) specs.push_back({w.id(), w.metric(), w.higher_is_better()});
  // Every row is of a workload the run ran (thirty-eighth attack: a regressing workload taken
  // out of the experiment went unjudged, and rows renamed to "ghost" hid a point's oops).
  for (auto& r : b.rows)
    if (std::none_of(specs.begin(), specs.end(), [&](auto& s) { return s.id == r.workload; }))
      throw UserError("the bundle's rows measure workload '" + r.workload + "', which its experiment does not run",
                      kEditedHint);
  // Every point the plan has, in its order, or the points before an early stop (thirty-eighth
  // attack: a failed point's block deleted, and the run's pending points, made exit 0).
  auto plan_points = b.plan.is_object() ? b.plan.value("points", json()) : json();
  if (plan_points.is_array()) {
    const bool cut = b.points.size() > plan_points.size() || (b.points.size() < plan_points.size() && !evidence::stopped_early(b));
    bool differ = false;
    for (size_t i = 0; i < b.points.size() && i < plan_points.size() && !differ; ++i)
      differ = plan_points[i] != json{{"point", b.points[i].id}, {"block", b.points[i].block}, {"arm", b.points[i].arm}};
    if (cut || differ)
      throw UserError("the bundle's " + std::to_string(b.points.size()) + " points are not the " +
                          std::to_string(plan_points.size()) + " its plan has",
                      kEditedHint);
  }
  auto gates = check_rows_against_plan(e, b);
  for (auto& g : kernel_gates(e, b.points, b.builds)) gates.push_back(g);
  // A run that boots kernels records both builds; without them no audit says they match.
  if (experiment::backend_rules(e.backend).boots_kernels &&
      !(b.builds.is_object() && b.builds.contains("control") && b.builds.contains("patched")))
    gates.push_back(analysis::make_gate(analysis::GateKind::matched_builds, "builds", false,
                                        "the bundle holds no builds of control and patched to audit"));
  auto a = analysis::analyze(b.points, b.rows, specs, opts, gates);
  check_early_stop(e, b, plan_points, a);
  return a;
}


std::filesystem::path bundle_in(const std::filesystem::path& dir) {
  auto plain = dir / "bundle.json";
  return !std::filesystem::exists(plain) && std::filesystem::exists(dir / kCompressedBundleName)
             ? dir / kCompressedBundleName
             : plain;
}

}  // namespace ks::pipeline

#include "agent/options.hpp"

#include <CLI/CLI.hpp>
#include <array>
#include <limits>
#include <sstream>

namespace ks::agent {
namespace {

constexpr std::array<std::pair<WorkloadKind, std::string_view>, 5> kWorkloads{{
    {WorkloadKind::Clone, "clone"},
    {WorkloadKind::Dedupe, "dedupe"},
    {WorkloadKind::DioRandwrite, "dio-randwrite"},
    {WorkloadKind::BufferedWrite, "buffered-write"},
    {WorkloadKind::Fio, "fio"},
}};

constexpr int64_t kSectorSize = 4096;  // btrfs clones and dedupes whole sectors only

std::string names_joined() {
  std::string s;
  for (auto& [kind, name] : kWorkloads) s += (s.empty() ? "" : ", ") + std::string(name);
  return s;
}

// The options every workload takes.
void add_common(CLI::App& sub, Options& o) {
  sub.add_option("--dir", o.dir, "Directory on the filesystem under test (must exist)")->required();
  sub.add_option("--rounds", o.rounds, "Measured rounds")->capture_default_str();
  sub.add_option("--warmup", o.warmup, "Warm-up rounds before the measured ones")->capture_default_str();
  sub.add_option("--cpu", o.cpu, "Pin to this CPU (-1: do not pin)")->capture_default_str();
  sub.add_option("--out", o.out, "Write the JSON lines to this file instead of stdout");
  sub.add_option("--profile-switch", o.profile_switch,
                 "Write 1 to this file as each round's timed operations start and 0 as they end (ftrace's "
                 "function_profile_enabled: the function profiler then counts those operations only)");
  sub.add_flag("--no-canary{false}", o.canary,
               "Do not time the CPU canary around each round: under a deterministic clock (QEMU's instruction "
               "count) a busy host cannot disturb a round, and the canary costs two 40-million-instruction loops");
}

void add_remap(CLI::App& sub, Options& o) {
  sub.add_option("--ops", o.ops, "Ioctls per round")->capture_default_str();
  sub.add_option("--range-bytes", o.range_bytes, "Bytes per ioctl (multiple of 4096)")->capture_default_str();
}

void add_dio(CLI::App& sub, Options& o) {
  sub.add_option("--iodepth", o.iodepth, "io_uring queue depth per job")->capture_default_str();
  sub.add_option("--jobs", o.jobs, "Threads (fio: jobs) writing to the same file")->capture_default_str();
  sub.add_option("--file-size-mib", o.file_size_mib, "Size of the file written to")->capture_default_str();
  sub.add_option("--runtime-s", o.runtime_s, "Seconds per round")->capture_default_str();
}

std::string format_number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

std::optional<std::string> at_least(std::string_view option, int64_t value, int64_t min) {
  if (value >= min) return std::nullopt;
  return std::string(option) + " must be at least " + std::to_string(min) + " (got " +
         std::to_string(value) + ")";
}

}  // namespace

std::string_view workload_name(WorkloadKind kind) {
  for (auto& [k, name] : kWorkloads)
    if (k == kind) return name;
  return "?";
}

std::optional<WorkloadKind> workload_from_name(std::string_view name) {
  for (auto& [kind, n] : kWorkloads)
    if (n == name) return kind;
  return std::nullopt;
}

const std::vector<std::string>& workload_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (auto& [kind, name] : kWorkloads) v.emplace_back(name);
    return v;
  }();
  return names;
}

ParseResult parse_arguments(const std::vector<std::string>& args, const std::string& version) {
  ParseResult result;
  auto bad = [&](std::string message) {
    result.action = ParseResult::Action::BadInput;
    result.message = std::move(message);
    return result;
  };
  const std::string usage_hint = "run `ksandwich-agent --help` for the usage";

  // Catch an unknown workload before CLI11, whose "not expected" message would not say
  // which names are valid.
  if (args.empty())
    return bad("no workload given: ksandwich-agent <" + names_joined() + "> --dir DIR ...; " +
               usage_hint);
  if (!args[0].starts_with("-") && !workload_from_name(args[0]))
    return bad("unknown workload '" + args[0] + "': use one of " + names_joined());

  Options& o = result.options;
  CLI::App app{"ksandwich workload agent: runs one point's rounds on a mounted filesystem and "
               "prints JSON lines (start, one per round, end).",
               "ksandwich-agent"};
  app.set_version_flag("--version", "ksandwich-agent " + version);
  app.require_subcommand(1);
  app.allow_extras();  // inherited by the workloads; reported below, in argv order
  app.footer("Exit status: 0 rounds ran (failed rounds are data in the output); 1 the workload "
             "cannot run here or no measured round succeeded; 2 bad input or environment; 130 "
             "interrupted.");

  std::vector<CLI::App*> subs;
  for (auto& [kind, name] : kWorkloads) {
    auto* sub = app.add_subcommand(std::string(name));
    add_common(*sub, o);
    switch (kind) {
      case WorkloadKind::Clone:
        sub->description("4 KiB FICLONERANGE into holes, one range per op (ns/op)");
        add_remap(*sub, o);
        break;
      case WorkloadKind::Dedupe:
        sub->description("4 KiB FIDEDUPERANGE of identical ranges, one range per op (ns/op)");
        add_remap(*sub, o);
        break;
      case WorkloadKind::DioRandwrite:
        sub->description("io_uring O_DIRECT 4 KiB random writes to one file in a NOCOW directory (IOPS)");
        add_dio(*sub, o);
        sub->add_option("--ios", o.ios,
                        "Writes per round, all jobs together: the same work every round (0: --runtime-s decides)")
            ->capture_default_str();
        break;
      case WorkloadKind::BufferedWrite:
        sub->description("Sequential buffered writes then one fsync (IOPS, bytes/s)");
        sub->add_option("--size-mib", o.size_mib, "MiB written per round")->capture_default_str();
        sub->add_option("--block-kib", o.block_kib, "KiB per write")->capture_default_str();
        break;
      case WorkloadKind::Fio:
        sub->description("Run fio on a job file (see workloads/fio/*.fio); keep fio's JSON");
        sub->add_option("--job", o.job, "fio job file")->required();
        sub->add_option("--fio", o.fio, "fio program")->capture_default_str();
        add_dio(*sub, o);
        break;
    }
    subs.push_back(sub);
  }

  // CLI11 wants argv order reversed; keep ours intact.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    std::ostringstream out, err;
    app.exit(e, out, err);
    result.action = ParseResult::Action::PrintAndExit;
    result.message = out.str();
    return result;
  } catch (const CLI::CallForAllHelp& e) {
    std::ostringstream out, err;
    app.exit(e, out, err);
    result.action = ParseResult::Action::PrintAndExit;
    result.message = out.str();
    return result;
  } catch (const CLI::CallForVersion& e) {
    result.action = ParseResult::Action::PrintAndExit;
    result.message = std::string(e.what()) + "\n";
    return result;
  } catch (const CLI::ParseError& e) {
    std::string workload = args[0].starts_with("-") ? "<workload>" : args[0];
    return bad(std::string(e.what()) + "; run `ksandwich-agent " + workload +
               " --help` for its options");
  }

  for (auto* sub : subs)
    if (sub->parsed()) o.workload = *workload_from_name(sub->get_name());
  if (auto extra = app.remaining(true); !extra.empty()) {
    std::string name(workload_name(o.workload));
    std::string listed;
    for (auto& e : extra) listed += (listed.empty() ? "" : " ") + e;
    return bad(name + " does not take: " + listed + "; run `ksandwich-agent " + name +
               " --help` for its options");
  }
  if (auto problem = validate(o)) return bad(*problem);
  result.action = ParseResult::Action::Run;
  return result;
}

std::optional<std::string> validate(const Options& o) {
  if (o.dir.empty()) return "--dir is empty: give the directory on the filesystem under test";
  if (auto p = at_least("--rounds", o.rounds, 1)) return p;
  if (auto p = at_least("--warmup", o.warmup, 0)) return p;
  if (auto p = at_least("--cpu", o.cpu, -1)) return *p + "; -1 means do not pin";
  switch (o.workload) {
    case WorkloadKind::Clone:
    case WorkloadKind::Dedupe:
      if (auto p = at_least("--ops", o.ops, 1)) return p;
      if (auto p = at_least("--range-bytes", o.range_bytes, kSectorSize)) return p;
      if (o.range_bytes % kSectorSize != 0)
        return "--range-bytes must be a multiple of 4096, the btrfs sector size (got " +
               std::to_string(o.range_bytes) + ")";
      if (o.ops > std::numeric_limits<int64_t>::max() / o.range_bytes)
        return "--ops x --range-bytes overflows a file size: use fewer ops";
      break;
    case WorkloadKind::Fio:
      if (o.job.empty()) return "--job is empty: give an fio job file such as workloads/fio/dio-randwrite.fio";
      if (o.fio.empty()) return "--fio is empty: give the fio program (default: fio)";
      [[fallthrough]];
    case WorkloadKind::DioRandwrite:
      if (auto p = at_least("--iodepth", o.iodepth, 1)) return p;
      if (o.iodepth > 4096) return "--iodepth must be at most 4096 (got " + std::to_string(o.iodepth) + ")";
      if (auto p = at_least("--jobs", o.jobs, 1)) return p;
      if (o.jobs > 1024) return "--jobs must be at most 1024 (got " + std::to_string(o.jobs) + ")";
      if (auto p = at_least("--file-size-mib", o.file_size_mib, 1)) return p;
      if (!(o.runtime_s >= 0.01 && o.runtime_s <= 86400))  // also rejects NaN
        return "--runtime-s must be between 0.01 and 86400 seconds (got " + format_number(o.runtime_s) + ")";
      if (o.ios < 0) return "--ios must be at least 1 (got " + std::to_string(o.ios) + ")";
      if (o.ios > 0 && o.ios < o.jobs)
        return "--ios (" + std::to_string(o.ios) + ") is fewer writes than --jobs (" + std::to_string(o.jobs) +
               "): every job needs at least one";
      break;
    case WorkloadKind::BufferedWrite:
      if (auto p = at_least("--size-mib", o.size_mib, 1)) return p;
      if (auto p = at_least("--block-kib", o.block_kib, 1)) return p;
      if (o.size_mib * 1024 % o.block_kib != 0)
        return "--size-mib (" + std::to_string(o.size_mib) + " MiB) must be a whole number of " +
               "--block-kib blocks (" + std::to_string(o.block_kib) + " KiB)";
      break;
  }
  return std::nullopt;
}

}  // namespace ks::agent

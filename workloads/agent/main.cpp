// ksandwich-agent: runs one point's rounds of one workload on a mounted filesystem and
// prints JSON lines: a start line, one line per round, an end line.
//
// Exit status: 0 the rounds ran (failed rounds are data, marked "error"); 1 the workload
// cannot run here at all, or no measured round succeeded; 2 bad input or environment;
// 130 interrupted (the lines written so far stand).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "agent/canary.hpp"
#include "agent/counters.hpp"
#include "agent/cpu.hpp"
#include "agent/environment.hpp"
#include "agent/host.hpp"
#include "agent/options.hpp"
#include "agent/output.hpp"
#include "agent/record.hpp"
#include "agent/workload.hpp"
#include "boot/baremetal/kexec.hpp"
#include "proc/runner.hpp"
#include "util/error.hpp"

namespace {

using namespace ks::agent;

constexpr int kExitCannotRun = 1;  // the workload cannot run here, or no measured round succeeded
constexpr int kExitInterrupted = 130;

const std::string kVersion = std::string(KSANDWICH_VERSION) + " (" + KSANDWICH_GIT_REVISION + ")";

void say(const std::string& message) { std::fprintf(stderr, "ksandwich-agent: %s\n", message.c_str()); }

Json common_params(const Options& o) {
  return {{"dir", o.dir}, {"rounds", o.rounds}, {"warmup", o.warmup}, {"cpu", o.cpu}};
}

int run(const Options& o) {
  check_environment(o);
  ks::proc::install_interrupt_handlers();
  std::vector<int> allowed = o.cpu >= 0 ? pin_to_cpu(static_cast<int>(o.cpu)) : allowed_cpus();
  Output out(o.out);
  const std::string name(workload_name(o.workload));
  auto workload = make_workload(o);
  Counters::process();  // opened before any round starts its threads, so they inherit them
  if (!o.profile_switch.empty())
    if (auto why = ProfileSwitch::process().open(o.profile_switch); !why.empty())
      throw ks::UserError("--profile-switch " + o.profile_switch + ": " + why,
                      "give the function profiler's switch, e.g. /sys/kernel/tracing/function_profile_enabled");
  try {
    workload->prepare();
  } catch (const Unsupported& e) {
    say(name + " cannot run on " + o.dir + ": " + e.what());
    return kExitCannotRun;
  }

  Json params = common_params(o);
  params.update(workload->params());
  out.write(start_record({.workload = name,
                          .params = params,
                          .cpu_requested = o.cpu,
                          .cpu_allowed = allowed,
                          .kernel_release = kernel_release(),
                          .clocksource = clocksource(),
                          .agent_version = kVersion}));

  int64_t warmups_run = 0, measured_run = 0, failed = 0, measured_ok = 0;
  std::string first_error;
  std::optional<std::string> fatal;
  bool interrupted = false;

  // Runs one round and writes its line; false when the run must stop.
  auto round = [&](bool warmup, int64_t index) {
    if (ks::proc::interrupted()) {
      interrupted = true;
      return false;
    }
    RoundResult r;
    auto canary_before = o.canary ? time_canary() : 0;
    try {
      r = workload->run_round();
      if (o.canary) r.canary_ns = std::max(canary_before, time_canary());
    } catch (const Unsupported& e) {
      r.error = e.what();
      r.fatal = true;
    } catch (const ks::Interrupted&) {
      interrupted = true;  // a half-run round is not data
      return false;
    } catch (const std::exception& e) {
      r.error = e.what();  // set-up failed (e.g. ENOSPC): a failed round
    }
    if (ks::proc::interrupted()) {  // the round may have been cut short: not data
      interrupted = true;
      return false;
    }
    if (!r.clock.counters) r.counters_unavailable = Counters::process().unavailable();
    RoundContext context{.workload = name, .metric = workload->metric(), .round = index,
                         .warmup = warmup, .cpu = current_cpu()};
    out.write(round_record(context, r));
    (warmup ? warmups_run : measured_run)++;
    if (auto error = round_error(r)) {
      ++failed;
      if (first_error.empty()) first_error = *error;
      if (r.fatal) {
        fatal = *error;
        return false;
      }
    } else if (!warmup) {
      ++measured_ok;
    }
    return true;
  };

  bool go_on = true;
  for (int64_t i = 0; go_on && i < o.warmup; ++i) go_on = round(true, i);
  for (int64_t i = 0; go_on && i < o.rounds; ++i) go_on = round(false, i);
  out.write(end_record(measured_run, warmups_run, failed));

  if (fatal) {
    say(name + " cannot run on " + o.dir + ": " + *fatal);
    return kExitCannotRun;
  }
  if (interrupted) {
    say("interrupted after " + std::to_string(warmups_run + measured_run) + " rounds");
    return kExitInterrupted;
  }
  if (measured_ok == 0) {
    say("all " + std::to_string(measured_run) + " measured rounds of " + name + " failed; the first: " + first_error);
    return kExitCannotRun;
  }
  return 0;
}

// `ksandwich-agent kexec KERNEL INITRD CMDLINE` (INITRD "" for none): a bare-metal test
// kernel's way back into the lab kernel. Returns only when the switch failed.
int kexec_back(const std::vector<std::string>& args) {
  if (args.size() != 3) {
    say("usage: ksandwich-agent kexec KERNEL INITRD CMDLINE (INITRD \"\" for none)");
    return ks::kExitBadInput;
  }
  try {
    ks::boot::kexec::load(args[0], args[1].empty() ? std::nullopt : std::optional<std::filesystem::path>(args[1]), args[2]);
    ks::boot::kexec::reboot_into_loaded();
  } catch (const std::exception& e) {
    say(e.what());
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "kexec")
    return kexec_back(std::vector<std::string>(argv + 2, argv + argc));
  auto parsed = parse_arguments(std::vector<std::string>(argv + 1, argv + argc), kVersion);
  switch (parsed.action) {
    case ParseResult::Action::PrintAndExit:
      std::fputs(parsed.message.c_str(), stdout);
      if (!parsed.message.ends_with('\n')) std::fputc('\n', stdout);
      return 0;
    case ParseResult::Action::BadInput:
      say(parsed.message);
      return ks::kExitBadInput;
    case ParseResult::Action::Run:
      break;
  }
  try {
    return run(parsed.options);
  } catch (const ks::UserError& e) {
    say(std::string(e.what()) + (e.hint().empty() ? "" : ": " + e.hint()));
    return ks::kExitBadInput;
  } catch (const ks::Interrupted&) {
    say("interrupted");
    return kExitInterrupted;
  } catch (const std::exception& e) {
    say(e.what());
    return 1;
  }
}

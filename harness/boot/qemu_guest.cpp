// The QEMU backend's pure side: the QEMU command line as data, what the guest runs (its
// kernel command line and plan) and what comes back (the results port, the console).
// Nothing here touches the machine; qemu.cpp adds the side effects.
#include "boot/qemu.hpp"
#include "boot/qemu_detail.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "machine/machine.hpp"
#include "proc/runner.hpp"
#include "trace/kernel_log.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"
#include "util/journal.hpp"

namespace ks::boot {
namespace {

using nlohmann::json;
using namespace detail;

const std::string kGuestAgent = "/usr/bin/ksandwich-agent";
const std::string kGuestFioJobs = "/ksandwich/fio";
const std::string kGuestMount = "/mnt";
// The guest keeps the unpacked initramfs (up to ~200 MiB with fio) in RAM beside brd.
constexpr uint64_t kGuestHeadroomMib = 384;

// "none voluntary (full)": the mode in force is the one in parentheses.
json current_choice(const std::string& choices) {
  auto open = choices.find('('), close = choices.find(')');
  if (choices.empty()) return json();
  if (open == std::string::npos || close == std::string::npos || close < open) return choices;
  return choices.substr(open + 1, close - open - 1);
}

bool is_jiffies(const std::string& clocksource) {
  return clocksource.empty() || clocksource == "jiffies" || clocksource == "refined-jiffies";
}

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> lines;
  for (auto& line : split(text, '\n')) {
    std::string clean;
    for (char c : line)
      if (c != '\r') clean += c;
    lines.push_back(std::move(clean));
  }
  while (!lines.empty() && trim(lines.back()).empty()) lines.pop_back();
  return lines;
}

std::string last_chars(const std::string& s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

// The console's last few lines on one line, for a failure message: the cause first.
std::string console_ending(std::string_view console) {
  auto tail = trim(console_tail(console, 3));
  if (tail.empty()) return "the console is empty";
  std::replace(tail.begin(), tail.end(), '\n', ' ');
  return "the console ends: " + last_chars(tail, 300);
}

}  // namespace

// ---- The QEMU command line ----------------------------------------------------------

std::string qemu_option_value(std::string_view value) {
  std::string out;
  for (char c : value) {
    out += c;
    if (c == ',') out += ',';
  }
  return out;
}

std::vector<std::string> qemu_argv(const QemuSpec& s) {
  std::vector<std::string> argv;
  if (s.pin_cpu >= 0) argv = {"taskset", "-c", std::to_string(s.pin_cpu)};
  append(argv, {s.qemu,
                // Nothing QEMU would add by default: no NIC, no VGA, no monitor, no disks.
                "-nodefaults", "-no-user-config", "-display", "none",
                "-machine", std::string("q35,accel=") + (s.kvm ? "kvm" : "tcg"),
                "-cpu", cpu_model(s.kvm ? "kvm" : "tcg"),
                "-smp", std::to_string(s.vcpus),
                "-m", std::to_string(s.memory_mib),
                "-kernel", s.kernel.string(),
                "-initrd", s.initrd.string(),
                "-append", s.cmdline,
                "-serial", "file:" + s.console_log.string(),
                // reboot -f (the guest's last word) and panic=-1 both end QEMU.
                "-no-reboot",
                "-device", "virtio-serial-pci",
                "-chardev", "file,id=results,path=" + qemu_option_value(s.results.string()),
                "-device", "virtserialport,chardev=results,name=ksandwich.results"});
  // The guest's clocks advance 1 ns per instruction executed, and an idle guest skips ahead
  // to its next timer instead of sleeping: what the guest measures is its own work alone.
  if (s.icount && !s.kvm) append(argv, {"-icount", "shift=0,sleep=off"});
  if (s.nvme_image)
    append(argv, {"-drive", "file=" + qemu_option_value(s.nvme_image->string()) + ",if=none,id=nvm,format=raw",
                  "-device", "nvme,serial=ksandwich,drive=nvm"});
  return argv;
}

// ---- What the guest runs ------------------------------------------------------------

GuestStorage guest_storage(const experiment::Storage& storage) {
  if (storage.kind == "auto" || storage.kind == "brd") return {"brd", "/dev/ram0"};
  if (storage.kind == "nvme") return {"nvme", "/dev/nvme0n1"};
  if (storage.kind == "device") return {"device", storage.device};
  throw UserError("storage kind \"" + storage.kind + "\" is not available in the qemu guest",
                  "use \"storage\": {\"kind\": \"brd\"} (a RAM disk in the guest) or \"nvme\" "
                  "(an emulated drive backed by a file)");
}

void check_guest_fits(const experiment::Experiment& e) {
  auto storage = guest_storage(e.storage);
  require(storage.kind != "brd" || e.storage.size_mib + kGuestHeadroomMib <= e.qemu.memory_mib,
          "a brd of " + std::to_string(e.storage.size_mib) + " MiB does not fit in a guest of " +
              std::to_string(e.qemu.memory_mib) + " MiB",
          "raise qemu.memory_mib to at least storage.size_mib + " + std::to_string(kGuestHeadroomMib));
}

std::string guest_cmdline(const experiment::Experiment& e, const experiment::Arm& arm) {
  // random.trust_cpu=on seeds the CRNG from RDRAND at boot: the guest has no other entropy,
  // and without it mkfs.btrfs (libuuid's getrandom) waits ~6 s under TCG on every point.
  std::vector<std::string> words{"console=ttyS0", "panic=-1", "preempt=none", "random.trust_cpu=on"};
  if (guest_storage(e.storage).kind == "brd") {
    words.push_back("brd.rd_nr=1");
    words.push_back("brd.rd_size=" + std::to_string(e.storage.size_mib * 1024));  // KiB
  }
  append(words, arm.cmdline);
  return join(words, " ");
}

int guest_cpu(const experiment::Experiment& e) {
  return e.cpu >= 0 ? static_cast<int>(e.qemu.vcpus) - 1 : -1;
}

std::string guest_plan(const experiment::Experiment& e, const experiment::Arm& arm, const evidence::Clock& clock,
                       std::optional<int> agent_cpu) {
  auto storage = guest_storage(e.storage);
  auto mkfs_options = e.storage.mkfs_options;
  append(mkfs_options, arm.extra_mkfs_options);
  auto mount_options = e.storage.mount_options;
  append(mount_options, arm.extra_mount_options);
  experiment::Experiment in_guest = e;
  in_guest.cpu = agent_cpu.value_or(guest_cpu(e));

  std::string plan =
      "# What this guest runs: written by the harness, sourced by /init (guest/init.sh).\n"
      "KS_STORAGE_KIND=" + shell_quote(storage.kind) + "\n"
      "KS_DEVICE=" + shell_quote(storage.device) + "\n"
      "KS_MOUNT_OPTIONS=" + shell_quote(join(mount_options, ",")) + "\n\n"
      "ks_mkfs() {\n  mkfs.btrfs -f";
  for (auto& option : mkfs_options) plan += " " + shell_quote(option);
  plan += " \"$KS_DEVICE\"\n}\n\nks_workloads() {\n";
  for (auto& w : e.workloads) {
    auto argv = agent_argv(kGuestAgent, w, in_guest, kGuestMount + "/" + w.id(), kGuestFioJobs, !clock.deterministic);
    plan += "  run_workload " + shell_quote(w.id()) + " " + shell_line(argv) + "\n";
  }
  plan += "}\n\n";

  // Names for the guest's `grep -F` (its "-e WORD" options) and `grep -E`: guest/init.sh.
  auto grep_words = [](const std::vector<std::string>& words) {
    return shell_quote(words.empty() ? "" : "-e " + join(words, " -e "));
  };
  std::vector<std::string> functions;
  for (auto& t : direct_hit_targets(e, arm.name)) functions.push_back(t.function);
  plan += "KS_TRACE_FUNCTIONS=" + shell_quote(join(functions, " ")) + "\n"
          "KS_TRACE_WORDS=" + grep_words(functions) + "\n"
          "KS_TRACE_REGEX=" + shell_quote(trace::functions_regex(functions)) + "\n";
  auto pass = direct_hit_pass(in_guest);
  if (!e.profile) {
    plan += "ks_direct_hit_pass() {\n";
    for (auto& w : pass.workloads) {
      auto id = w.id() + "-direct-hit";
      auto argv = agent_argv(kGuestAgent, w, pass, kGuestMount + "/" + id, kGuestFioJobs, !clock.deterministic);
      plan += "  run_pass " + shell_quote(id) + " " + shell_line(argv) + "\n";
    }
    return plan + "}\n";
  }
  // The profiling pass, in the direct-hit pass's shape and in its place: it counts the
  // direct hits too, over the timed operations. Every arm's direct-hit functions are
  // profiled in every arm: a function profiled in one only would read as new on its path.
  std::vector<std::string> all_arms;
  for (auto& d : e.direct_hits)
    if (std::find(all_arms.begin(), all_arms.end(), d.function) == all_arms.end()) all_arms.push_back(d.function);
  plan += "KS_PROFILE_WORDS=" + grep_words(trace::profile_words(all_arms)) + "\n"
          "KS_PROFILE_REGEX=" + shell_quote(trace::profile_regex(all_arms)) + "\n"
          "ks_profile_pass() {\n";
  for (auto& w : pass.workloads) {
    auto argv = agent_argv(kGuestAgent, w, pass, kGuestMount + "/" + w.id() + "-profile", kGuestFioJobs,
                           !clock.deterministic);
    append(argv, {"--profile-switch", "/sys/kernel/tracing/function_profile_enabled"});
    plan += "  profile_workload " + shell_quote(w.id()) + " " + shell_line(argv) + "\n";
  }
  return plan + "}\n";
}

// ---- What comes back ----------------------------------------------------------------

GuestReport parse_guest_results(std::string_view text) {
  GuestReport report;
  std::string workload;  // the agent's lines belong to the last "workload" record
  std::string trace_file;  // the tracefs file the last "text" record came from
  for (auto& line : split(text, '\n')) {
    if (trim(line).empty()) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const json::parse_error&) {
      ++report.unreadable_lines;
      continue;
    }
    if (!j.is_object()) {
      ++report.unreadable_lines;
      continue;
    }
    auto type = string_field(j, "type");
    if (type == "guest") {
      report.guest = j;
    } else if (type == "storage") {
      report.storage = j;
    } else if (type == "workload") {
      workload = string_field(j, "id");
      if (!report.agent_start_uptime_s) report.agent_start_uptime_s = number_field(j, "uptime_s");
    } else if (type == "workload_exit") {
      workload.clear();
      report.workloads_done_uptime_s = number_field(j, "uptime_s");
    } else if (type == "trace") {
      if (!report.trace) report.trace.emplace();
      report.trace->method = string_field(j, "method");
      report.trace->failure = string_field(j, "failure");
    } else if (type == "profile") {  // a workload's profiling pass; its texts follow
      report.profiles.push_back({string_field(j, "id"), -1, {}, {}});
      trace_file.clear();
      auto status = j.find("status");
      if (status != j.end() && status->is_number_integer()) report.profiles.back().status = status->get<int>();
    } else if (type == "text") {  // one line of a file the guest read
      auto file = string_field(j, "file");
      auto text = string_field(j, "text") + "\n";
      if (starts_with(file, "profile:")) {  // profile:<id>:agent | profile:<id>:function<cpu>
        auto part = file.substr(file.rfind(':') + 1);
        auto& p = report.profiles;
        if (p.empty() || file != "profile:" + p.back().workload + ":" + part) {
          ++report.unreadable_lines;
        } else if (part == "agent") {
          p.back().agent_output += text;
        } else {
          if (file != trace_file || p.back().stats.empty()) p.back().stats.emplace_back();
          p.back().stats.back() += text;
        }
        trace_file = file;
        continue;
      }
      if (file == "dmesg") {
        report.kernel_log = report.kernel_log.value_or("") + text;
        continue;
      }
      if (file == "console") {
        report.console = report.console.value_or("") + text;
        continue;
      }
      if (!report.trace) report.trace.emplace();
      if (file == "available_filter_functions") report.trace->available_filter_functions += text;
      else if (file == "set_ftrace_filter") report.trace->set_ftrace_filter += text;
      else if (starts_with(file, "function")) {  // trace_stat/function<cpu>, one text per CPU
        if (file != trace_file) report.trace->profile_stats.emplace_back();
        report.trace->profile_stats.back() += text;
      }
      trace_file = file;
    } else if (type == "exit") {
      auto status = j.find("status");
      report.exit_status = status != j.end() && status->is_number_integer() ? status->get<int>() : -1;
      report.exit_reason = string_field(j, "reason");
      report.exit_uptime_s = number_field(j, "uptime_s");
    } else if (!workload.empty()) {
      j["workload_id"] = workload;
      report.agent_records.push_back(std::move(j));
    } else {
      ++report.unreadable_lines;  // an agent line outside any workload: not ours to place
    }
  }
  return report;
}

json guest_environment(const json& g) {
  json env{{"kernel_release", string_field(g, "kernel_release")},
           {"kernel_version", string_field(g, "kernel_version")},
           {"kernel_cmdline", string_field(g, "kernel_cmdline")},
           {"preemption", current_choice(string_field(g, "preempt"))},
           {"clocksource", string_field(g, "clocksource")},
           {"guest_cpus_online", string_field(g, "cpus")}};
  json available = json::array();
  for (auto& name : split(string_field(g, "available_clocksource"), ' '))
    if (!trim(name).empty()) available.push_back(trim(name));
  env["available_clocksources"] = available;
  // "MemTotal:        2015000 kB"
  auto mem = split(trim(string_field(g, "mem_total")), ' ');
  std::erase_if(mem, [](const std::string& w) { return w.empty(); });
  env["guest_mem_total_mib"] = mem.size() >= 2 ? json(std::stoull(mem[1]) / 1024) : json();
  return env;
}

std::optional<std::string> guest_failure(const GuestRun& run) {
  const auto& report = run.report;
  for (auto& line : lines_of(run.console))
    if (line.find("Kernel panic") != std::string::npos)
      return "guest kernel panicked: " + trim(line);
  if (run.timed_out)
    return "guest did not finish within point_timeout_s = " + std::to_string(run.timeout_s) +
           " s; QEMU was killed; " + console_ending(run.console);
  if (report.guest.is_null()) {
    if (run.qemu_exit_code != 0 && !trim(run.qemu_output).empty())
      return "QEMU exited " + std::to_string(run.qemu_exit_code) + " before the guest reported: " +
             trim(last_chars(trim(run.qemu_output), 800));
    return "the guest never reported (QEMU exited " + std::to_string(run.qemu_exit_code) +
           "): init did not start or found no results port; " + console_ending(run.console);
  }
  auto clocksource = string_field(report.guest, "clocksource");
  if (is_jiffies(clocksource))
    return "guest clocksource is '" + clocksource +
           "': a 1 ms tick cannot time these workloads; give the kernel a real clock (ACPI, HPET, "
           "HPET_TIMER, X86_PM_TIMER as in configs/kernel/btrfs-bench.config) and no clocksource= override";
  auto release = string_field(report.guest, "kernel_release");
  if (!run.expected_release.empty() && release != run.expected_release)
    return "guest runs kernel " + release + ", expected " + run.expected_release + " (the arm's build)";
  if (!report.exit_status)
    return "the guest stopped without an exit record (QEMU exited " + std::to_string(run.qemu_exit_code) +
           "; see the console tail)";
  if (*report.exit_status != 0)
    return "guest: " + report.exit_reason + " (exit status " + std::to_string(*report.exit_status) + ")";
  if (run.qemu_exit_code != 0)
    return "QEMU exited " + std::to_string(run.qemu_exit_code) + ": " + trim(last_chars(run.qemu_output, 800));
  return std::nullopt;
}

std::string console_tail(std::string_view console, size_t lines) {
  auto all = lines_of(console);
  size_t from = all.size() > lines ? all.size() - lines : 0;
  return join(std::vector<std::string>(all.begin() + static_cast<long>(from), all.end()), "\n");
}

std::vector<std::string> console_findings(std::string_view console) {
  static const char* kSigns[] = {"WARNING:", "BUG:", "Oops", "Kernel panic", "general protection fault",
                                 "INFO: task", "Call Trace:"};
  std::vector<std::string> found;
  for (auto& line : lines_of(console))
    for (const char* sign : kSigns)
      if (line.find(sign) != std::string::npos) {
        found.push_back(trim(line));
        break;
      }
  return found;
}

json guest_timeline(const GuestReport& report) {
  auto at = [](std::optional<double> v) { return v ? json(*v) : json(); };
  return {{"init_reported", at(number_field(report.guest, "uptime_s"))},
          {"filesystem_ready", at(number_field(report.storage, "uptime_s"))},
          {"agent_started", at(report.agent_start_uptime_s)},
          {"workloads_done", at(report.workloads_done_uptime_s)},
          {"exit", at(report.exit_uptime_s)}};
}

PointResult guest_point_result(const PointContext& ctx, const GuestRun& guest, const GuestStorage& storage,
                               const fs::path& console_log) {
  const auto& e = ctx.experiment;
  const auto& report = guest.report;
  PointResult result;
  result.log = fs::relative(console_log, ctx.bundle_dir).string();
  result.kernel_release = string_field(report.guest, "kernel_release");
  result.agent_records = report.agent_records;

  auto mkfs_options = e.storage.mkfs_options;
  append(mkfs_options, ctx.arm.extra_mkfs_options);
  auto mount_options = e.storage.mount_options;
  append(mount_options, ctx.arm.extra_mount_options);
  json storage_json{{"kind", storage.kind},
                    {"requested_kind", e.storage.kind},
                    {"device", storage.device},
                    {"size_mib", e.storage.size_mib},
                    {"mkfs_options", mkfs_options},
                    {"mount_options", mount_options}};
  if (report.storage.is_object()) {
    for (auto& [key, value] : report.storage.items())
      if (key != "type" && key != "uptime_s") storage_json[key] = value;
    if (auto bytes = number_field(report.storage, "size_bytes"))
      storage_json["size_mib"] = static_cast<uint64_t>(*bytes) >> 20;  // read back, not assumed
  }
  result.storage = storage_json;

  // Kernel health from the guest's own dmesg (not the console, where mkfs and the agent
  // also write). A guest that died before sending it is a failed point anyway.
  if (report.kernel_log) {
    result.health = trace::kernel_health("", trace::split_log_lines(*report.kernel_log));
  } else {
    result.health = {{"error", "the guest sent no kernel log"}};
  }
  result.health["console_findings"] = console_findings(guest.console);
  result.health["unreadable_result_lines"] = report.unreadable_lines;
  if (auto targets = direct_hit_targets(e, ctx.arm.name); !targets.empty()) {
    trace::TraceCapture capture;
    capture.failure = "the guest sent no direct-hit records (the point ended before the pass)";
    if (report.trace) capture = *report.trace;
    // With a profiling pass, it counted the direct hits: what it sent, failed agent or not.
    for (auto& sent : report.profiles)
      capture.profile_stats.insert(capture.profile_stats.end(), sent.stats.begin(), sent.stats.end());
    result.direct_hit = trace::to_json(trace::count_calls(targets, capture));
  }
  if (e.profile) {
    result.profile = json::array();
    for (auto& w : e.workloads) {
      auto sent = std::find_if(report.profiles.begin(), report.profiles.end(),
                               [&](auto& p) { return p.workload == w.id(); });
      result.profile.push_back(sent != report.profiles.end()
                                   ? trace::profile_entry(*sent)
                                   : json{{"workload", w.id()},
                                          {"failure", "the guest sent no profile of it (a kernel without the function "
                                                      "profiler, or the point ended before the pass: see its log)"}});
    }
  }
  if (auto failure = guest_failure(guest)) {
    result.status = "failed";
    result.failure = *failure;
    result.console_tail = console_tail(guest.console);
  }
  return result;
}

}  // namespace ks::boot

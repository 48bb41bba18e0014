#include "boot/baremetal/switch.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "boot/qemu.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::boot::baremetal {
namespace {

using nlohmann::json;

constexpr std::string_view kMagic = "KSANDWICH-RESULTS 1 ";

[[noreturn]] void bad(const std::string& key, const std::string& problem, const std::string& hint = "") {
  throw UserError("experiment: /baremetal" + (key.empty() ? "" : "/" + key) + ": " + problem, hint);
}

std::string string_of(const json& section, const std::string& key) {
  const auto& v = section.at(key);
  if (!v.is_string()) bad(key, "must be a string");
  auto s = v.get<std::string>();
  if (s.find('\0') != std::string::npos || s.find('\n') != std::string::npos)
    bad(key, "must not hold a NUL or a newline");
  return s;
}

}  // namespace

Options parse_options(const json& section) {
  if (section.is_null())
    bad("", "the baremetal backend needs its section",
        "add \"baremetal\": {\"results_device\": \"/dev/...\", \"results_allow_overwrite\": true}");
  if (!section.is_object()) bad("", "must be an object");
  Options o;
  for (auto& [key, value] : section.items()) {
    if (key.starts_with("_")) continue;  // a comment
    if (key == "results_device") {
      o.results_device = string_of(section, key);
      if (!fs::path(o.results_device).is_absolute() || o.results_device.starts_with("/dev/") == false)
        bad(key, "\"" + o.results_device + "\" is not a device under /dev",
            "name a block device (or partition) this machine does not use, e.g. /dev/sdb2");
    } else if (key == "results_allow_overwrite") {
      if (!value.is_boolean()) bad(key, "must be true or false");
      o.results_allow_overwrite = value.get<bool>();
    } else if (key == "return") {
      o.return_by = string_of(section, key);
      if (o.return_by != "reboot" && o.return_by != "kexec")
        bad(key, "must be \"reboot\" or \"kexec\"",
            "reboot: the test kernel reboots into the default boot entry; kexec: it kexecs into lab_kernel");
    } else if (key == "lab_kernel") {
      o.lab_kernel = string_of(section, key);
    } else if (key == "lab_initrd") {
      o.lab_initrd = string_of(section, key);
    } else if (key == "lab_cmdline") {
      o.lab_cmdline = string_of(section, key);
    } else {
      bad(key, "unknown key",
          "the keys are results_device, results_allow_overwrite, return, lab_kernel, lab_initrd, lab_cmdline");
    }
  }
  if (o.results_device.empty())
    bad("results_device", "is required: where a point's results survive the switch back to the lab kernel",
        "name a block device (or partition) this machine does not use, with \"results_allow_overwrite\": true");
  if (o.return_by != "kexec")
    for (const char* key : {"lab_kernel", "lab_initrd", "lab_cmdline"})
      if (section.contains(key)) bad(key, "only applies to \"return\": \"kexec\"");
  return o;
}

std::string slot_block(const SlotHeader& h) {
  auto line = fmt::format("{}{} {} {}\n", kMagic, h.slot, h.state, h.bytes);
  line.resize(kSlotHeaderBytes, '\0');
  return line;
}

std::optional<SlotHeader> parse_slot_block(std::string_view block) {
  if (!block.starts_with(kMagic)) return std::nullopt;
  auto end = block.find('\n');
  if (end == std::string_view::npos) return std::nullopt;
  auto words = split(std::string(block.substr(kMagic.size(), end - kMagic.size())), ' ');
  if (words.size() != 3 || words[0].empty()) return std::nullopt;
  if (words[1] != "armed" && words[1] != "running" && words[1] != "done") return std::nullopt;
  if (words[2].empty() || words[2].size() > 12 ||
      !std::all_of(words[2].begin(), words[2].end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return SlotHeader{words[0], words[1], std::stoull(words[2])};
}

Outcome judge_return(const Switch& s, const std::optional<SlotHeader>& header, double lab_booted_at,
                     uint32_t timeout_s) {
  using Kind = Outcome::Kind;
  if (!header || header->slot != s.slot)
    return {Kind::Failed, "the results device no longer holds this point's slot " + s.slot +
                              " (something else wrote its first block while the test kernel ran)"};
  if (header->state == "done") {
    if (header->bytes > kMaxResultBytes)
      return {Kind::Failed, fmt::format("the slot claims {} bytes of results, more than the {} MiB a point may send",
                                        header->bytes, kMaxResultBytes >> 20)};
    return {Kind::Collect, ""};
  }
  const double away = std::max(0.0, lab_booted_at - s.switched_at);
  const auto margin = watchdog_margin_s(timeout_s);
  if (away >= margin) {
    if (header->state == "running")
      return {Kind::Failed,
              fmt::format("the test kernel did not finish within point_timeout_s = {} s: the watchdog rebooted the "
                          "machine (the lab kernel booted again {:.0f} s after the switch)",
                          timeout_s, away)};
    return {Kind::Failed, fmt::format("the test kernel never started its init (the slot is still \"armed\"); the "
                                      "lab kernel booted again {:.0f} s after the switch, past point_timeout_s = {} s",
                                      away, timeout_s)};
  }
  auto lost = fmt::format("the lab kernel booted again {:.0f} s after the switch, before the watchdog's {} s, with the "
                          "point unfinished (slot \"{}\"): it was reset or lost power",
                          away, margin, header->state);
  if (s.attempt < kMaxAttempts) return {Kind::Rerun, lost + "; running the point again"};
  return {Kind::Failed, fmt::format("{}, for the {}th time; a test kernel that panics at once does this (panic=-1 "
                                    "reboots it), see the lab's boot log",
                                    lost, s.attempt)};
}

uint32_t watchdog_margin_s(uint32_t point_timeout_s) { return std::min<uint32_t>(point_timeout_s, 65535); }

std::string test_cmdline(const experiment::Experiment& e, const experiment::Arm& arm, const std::string& slot) {
  auto without_arm = arm;
  without_arm.cmdline.clear();
  std::vector<std::string> words{guest_cmdline(e, without_arm),
                                 "softdog.soft_margin=" + std::to_string(watchdog_margin_s(e.point_timeout_s)),
                                 "ksandwich.slot=" + slot};
  words.insert(words.end(), arm.cmdline.begin(), arm.cmdline.end());
  return join(words, " ");
}

std::string test_plan(const experiment::Experiment& e, const experiment::Arm& arm, const std::string& return_by,
                      const std::string& lab_cmdline, const std::string& device_identity) {
  return guest_plan(e, arm, evidence::clock_named("wall"), e.cpu) +
         "\n# Bare metal: results to the slot on the results device, then back to the lab kernel.\n"
         "KS_RESULTS=slot\n"
         "KS_RETURN=" + shell_quote(return_by) + "\n"
         "KS_LAB_CMDLINE=" + shell_quote(lab_cmdline) + "\n" +
         (device_identity.empty() ? "" : "KS_DEVICE_IDENTITY=" + shell_quote(device_identity) + "\n");
}

std::string resume_unit(const fs::path& ksandwich, const fs::path& state_dir,
                        const std::vector<std::pair<std::string, std::string>>& environment) {
  std::string env = "Environment=KSANDWICH_BAREMETAL_STATE=" + state_dir.string();
  for (auto& [name, value] : environment) env += " " + name + "=" + value;
  return "# Written by `ksandwich baremetal install`; removed by `ksandwich baremetal uninstall`.\n"
         "[Unit]\n"
         "Description=ksandwich: go on with a bare-metal run after a kernel switch\n"
         "After=local-fs.target\n"
         "ConditionPathExists=" + (state_dir / "pending").string() + "\n\n"
         "[Service]\n"
         "Type=oneshot\n"
         + env + "\n"
         "ExecStart=" + ksandwich.string() + " baremetal resume\n"
         "StandardOutput=journal+console\n"
         "StandardError=journal+console\n"
         "TimeoutStartSec=infinity\n\n"
         "[Install]\n"
         "WantedBy=multi-user.target\n";
}

}  // namespace ks::boot::baremetal

#pragma once
// The bare-metal backend's pure side: its section of the experiment, the results slot a
// test kernel fills, the record of one switch, what the lab makes of a switch once it is
// back, the test kernel's command line and plan, and the boot hook's systemd unit.
//
// One point, one switch. The lab kernel (where `ksandwich run` runs) writes the slot
// header "armed" on the results device, records the switch in the point's directory,
// registers the run for the boot hook and kexecs the arm's kernel with the hermetic
// initramfs (guest/init.sh). The test kernel arms the watchdog, marks the slot "running",
// runs the point, writes its records after the header, marks it "done <bytes>" and goes
// back: kexec into the lab kernel, or a reboot into the default boot entry. At boot the
// hook runs `ksandwich run --resume DIR --after-switch`, which reads the slot and goes on.
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "experiment/experiment.hpp"

namespace ks::boot::baremetal {

namespace fs = std::filesystem;

// ---- The experiment's "baremetal" section ----------------------------------------------

struct Options {
  std::string results_device;          // required
  bool results_allow_overwrite = false;
  std::string return_by = "reboot";    // "return": reboot | kexec
  std::string lab_kernel;              // return kexec; empty: /boot/vmlinuz-<release now>
  std::optional<std::string> lab_initrd;  // unset: /boot/initrd.img-<release now> if it exists; "": none
  std::string lab_cmdline;             // empty: /proc/cmdline now
};

// Throws UserError("experiment: /baremetal/<key>: ...") naming what is wrong.
Options parse_options(const nlohmann::json& section);

// ---- The results slot: the results device's first block, then the records ------------

inline constexpr uint64_t kSlotHeaderBytes = 4096;
inline constexpr uint64_t kMaxResultBytes = 256ULL << 20;

struct SlotHeader {
  std::string slot;   // the switch's nonce (ksandwich.slot= on the test kernel's command line)
  std::string state;  // armed (by the lab) | running (the test kernel's init started) | done
  uint64_t bytes = 0; // done: the records' length, from byte kSlotHeaderBytes
};

// "KSANDWICH-RESULTS 1 <slot> <state> <bytes>\n", zero-padded to kSlotHeaderBytes.
std::string slot_block(const SlotHeader& header);
// nullopt when BLOCK does not start with a slot header line.
std::optional<SlotHeader> parse_slot_block(std::string_view block);

// ---- One switch, as the lab recorded it before leaving (DIR/points/NN-arm/switch.json) -

struct Switch {
  std::string slot;
  int attempt = 1;             // the point's attempts so far, this one included
  double switched_at = 0;      // CLOCK_REALTIME seconds when the lab kexec'd
  std::string started_at;      // ISO 8601 of the point's first attempt
  double first_switched_at = 0;
  std::string kernel;          // the arm's bzImage
  std::string kernel_release;  // what it must report
  std::string initramfs;       // its path in DIR, and its SHA-256
  std::string initramfs_sha256;
  std::string cmdline;
  std::string return_by;
  std::string lab_release;     // the lab kernel that switched
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Switch, slot, attempt, switched_at, started_at, first_switched_at,
                                                kernel, kernel_release, initramfs, initramfs_sha256, cmdline,
                                                return_by, lab_release)

// ---- Back in the lab kernel: what became of the switch --------------------------------

inline constexpr int kMaxAttempts = 2;  // a point the machine lost twice before it finished fails

struct Outcome {
  enum class Kind { Collect, Failed, Rerun } kind;
  std::string why;  // Failed and Rerun: for the bundle and the progress line
};

// HEADER as read from the results device, LAB_BOOTED_AT when the lab kernel started again
// (CLOCK_REALTIME seconds, now - uptime: what the lab did since it booted does not count),
// TIMEOUT_S the point's timeout (the watchdog's margin). A slot marked done is collected.
// The machine back after the timeout with the slot unfinished: a hung test kernel the
// watchdog rebooted, failed. Back sooner: it was reset or lost power, and the point runs
// again, up to kMaxAttempts.
Outcome judge_return(const Switch& s, const std::optional<SlotHeader>& header, double lab_booted_at,
                     uint32_t timeout_s);

// ---- What the test kernel runs -----------------------------------------------------

// softdog takes at most 65535 s.
uint32_t watchdog_margin_s(uint32_t point_timeout_s);

// The QEMU guest's command line (console, panic=-1, preempt=none, brd) plus the watchdog's
// margin and the slot, then the arm's own words (last wins).
std::string test_cmdline(const experiment::Experiment& e, const experiment::Arm& arm, const std::string& slot);

// The QEMU guest's plan (the agent on E's own cpu) plus: results to the slot, how to return
// (the lab kernel's command line for kexec; its image and initrd are files of the
// initramfs) and, for a named drive, its identity, by which the test kernel finds it.
std::string test_plan(const experiment::Experiment& e, const experiment::Arm& arm, const std::string& return_by,
                      const std::string& lab_cmdline, const std::string& device_identity = "");

// ---- The boot hook -------------------------------------------------------------------

inline constexpr const char* kUnitName = "ksandwich-resume.service";

// The systemd unit `ksandwich baremetal install` writes: at boot, when STATE_DIR/pending
// names a run, `KSANDWICH baremetal resume` goes on with it, in the environment the run
// needs (ENVIRONMENT: e.g. KSANDWICH_CACHE as it was at install; systemd passes no other).
std::string resume_unit(const fs::path& ksandwich, const fs::path& state_dir,
                        const std::vector<std::pair<std::string, std::string>>& environment = {});

}  // namespace ks::boot::baremetal

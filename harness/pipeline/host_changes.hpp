#pragma once
// What a run changes on this machine, kept safe:
// - one measuring run per machine: a flock on STATE/run.lock, which holds {pid, out_dir,
//   started_at}; a second run meets it with exit 2 naming the holder. Runs on QEMU's
//   instruction clock share it (a shared flock; the file names none of them). With storage kind
//   device, also a flock on the block device node for the whole run (the systemd block
//   device locking protocol). Both die with the process: SIGKILL leaves no stale lock.
// - the run's journal (DIR/logs/journal.jsonl, util/journal), registered while the run
//   lives in STATE/active/<pid>.json so that leftovers of a killed run can be found;
// - cleanup: undoes what a killed run left, last change first, skipping what is already
//   undone and what no longer matches (it never unmounts what the journal did not mount),
//   and only what a run still registered made.
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "boot/knobs.hpp"
#include "experiment/experiment.hpp"
#include "util/journal.hpp"

namespace ks::pipeline {

namespace fs = std::filesystem;

inline const fs::path kStateDir = "/run/ksandwich";

// DIR/logs/journal.jsonl
fs::path journal_file(const fs::path& out_dir);

// A run reads and writes its output directory as root: throws UserError when the directory,
// its logs/, points/ or a point's directory, or bundle.json(.gz) or run-id, exists and is a
// link, not of its kind, another user's, or world-writable (links planted there would be
// written through, files read back as the run's own), or when the way to it is not one only
// trusted users may change (util's untrusted_on_the_way). What does not exist yet the run makes.
void require_own_run_dir(const fs::path& out_dir);

// Where cleanup may act: what a run makes lies only there. Tests point them at a temporary
// directory.
struct UndoRules {
  std::vector<fs::path> mount_roots{kStateDir, "/sys/kernel/tracing"};  // mounts and mount points
  std::vector<fs::path> file_roots{"/dev/shm"};  // files (named ksandwich-*) and loop backing files
  boot::KnobRules knobs;                          // knobs; tracefs files must lie below /sys
  bool require_tracefs = true;                    // a tracefs entry must be on tracefs (tests: false)
};

struct CleanupReport {
  int undone = 0, skipped = 0;
  std::vector<std::string> lines;  // one per entry: what was done or why not
  std::string failure;             // the entry that could not be undone (cleanup stopped there)
  bool ok() const { return failure.empty(); }
};

// Undoes the pending entries of DIR's journal, last made first, and records each as undone
// (or skipped, with why). Stops at the first one it cannot undo: what was made before it may
// sit under it. Throws UserError when DIR has no journal, or while a process that made one
// of the pending changes is alive. Only changes made by a run registered in STATE (by pid
// and start time) are undone; the rest are reported and left. Unregisters DIR from STATE
// once nothing is left.
CleanupReport cleanup_run(const fs::path& out_dir, const UndoRules& rules = {},
                          const fs::path& state_dir = kStateDir);

// Registered runs whose process is gone and whose journal still holds changes not undone.
struct Leftover {
  fs::path dir;
  int pid = 0;
  std::vector<std::string> pending;  // short descriptions, last made first
};
std::vector<Leftover> leftovers(const fs::path& state_dir = kStateDir);
// Every registered run whose process is gone (leftovers or not), for `cleanup` without DIR.
std::vector<fs::path> dead_runs(const fs::path& state_dir = kStateDir);

// One line for an entry: "mount /run/ksandwich/mnt-1 (btrfs on /dev/zram0)".
std::string describe(const journal::Entry& entry);

// Held for the whole run by `run` and `calibrate`.
class HostChanges {
 public:
  // Takes the machine lock (UserError, exit 2, naming the holder) and, for storage kind
  // device, the device lock. RESUME: first undoes what the interrupted run in OUT_DIR left.
  // SHARED: the run's clock is one other work does not disturb (QEMU's instruction clock,
  // boot::Backend::undisturbed_clock): it shares the machine with runs like it, and only
  // with them; any other run has the machine to itself.
  HostChanges(const fs::path& state_dir, const fs::path& out_dir, const experiment::Experiment& e,
              bool resume, bool shared = false);
  // Closes the journal; unregisters the run when nothing is left to undo. Never throws.
  ~HostChanges();
  HostChanges(const HostChanges&) = delete;
  HostChanges& operator=(const HostChanges&) = delete;

  // Opens DIR/logs/journal.jsonl as this process's journal and registers the run in STATE.
  void open_journal();

 private:
  fs::path state_dir_, out_dir_, registration_;
  int run_lock_fd_ = -1, device_lock_fd_ = -1;
  fs::path locked_device_;
  std::unique_ptr<journal::Active> journal_;
};

}  // namespace ks::pipeline

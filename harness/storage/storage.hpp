#pragma once
// A fresh btrfs for every point, on a device the harness may format.
// The guard: the harness formats only a RAM device it created itself (brd, zram, loop over
// a file in /dev/shm), or a device the user names explicitly with allow_overwrite (whatever
// it holds, signature or not) that is not mounted, not in use, not swap and not the device
// holding /. It labels every btrfs it makes (Request::label, e.g. ksandwich-<run id>), so
// the run's later points and --resume recognise their own filesystem. Everything it creates it removes again: on success, on failure
// and on SIGINT/SIGTERM (the destructor runs as the Interrupted exception unwinds). Every
// change is journaled first (util/journal), so what a SIGKILL left can be undone later.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ks::storage {

namespace fs = std::filesystem;

struct Request {
  std::string kind = "auto";  // auto | brd | zram | loop | device
  uint64_t size_mib = 1024;
  fs::path device;            // kind == device
  bool allow_overwrite = false;
  std::vector<std::string> mkfs_options;   // extra mkfs.btrfs options
  std::vector<std::string> mount_options;  // joined with commas for mount -o
  fs::path scratch_dir = "/dev/shm";       // where loop backing files live
  // mkfs.btrfs -L: marks the filesystem as this run's. A device that holds nothing but a
  // btrfs with this label is this run's own and may be formatted again without
  // allow_overwrite. Empty: no label, no such recognition.
  std::string label;
};

// "ksandwich-<run id>": the label a run puts on the filesystems it makes.
std::string run_label(const std::string& run_id);
// The id of the run whose directory is RUN_DIR, kept in RUN_DIR/run-id (16 hex digits) so
// that later points and --resume find the same one; made on first use. existing_run_id
// gives nullopt where none was made yet. Both throw UserError when the file holds anything
// else (a run directory changed by hand), before anything is labelled with it.
std::string run_id(const fs::path& run_dir);
std::optional<std::string> existing_run_id(const fs::path& run_dir);

// What kind a request for "auto" resolves to on this machine: brd (only if we can load the
// module ourselves), then zram, then loop. Throws UserError for an unknown or missing kind.
std::string resolve_kind(const std::string& requested);

// Throws UserError saying why DEVICE must not be formatted and what to do. Only reads:
// /proc/self/mountinfo, /proc/swaps, /sys/class/block, `wipefs --no-act`, the btrfs
// superblock, an O_EXCL open. OWN_LABEL: see judge_device().
void guard_device(const fs::path& device, bool allow_overwrite, const std::string& own_label = {});

// What Filesystem's cleanups do, also for `ksandwich cleanup` (pipeline/host_changes) when a
// killed run's journal says what is left. Each throws SystemError when it cannot.
bool is_mount_point(const fs::path& dir);
void unmount(const fs::path& mount_point, bool lazily_if_busy = true);  // no-op when not mounted
void detach_loops_backed_by(const fs::path& file);
// Detaches the loop devices whose backing file is inode INO on device DEV ("maj:min", as
// journal::identity_of gives it); returns how many. What cleanup uses: a name can be reused.
int detach_loops_backed_by_inode(const std::string& dev, uint64_t ino);
void remove_zram(const std::string& id);
void unload_brd();  // no-op when brd is not loaded

class Filesystem {
 public:
  // Creates the device (if RAM-backed), runs mkfs.btrfs -f, mounts it on a fresh
  // directory. On any failure, removes what it created before rethrowing.
  static std::unique_ptr<Filesystem> create(const Request& request);
  ~Filesystem();  // unmount, detach, remove: never throws
  Filesystem(const Filesystem&) = delete;
  Filesystem& operator=(const Filesystem&) = delete;

  const fs::path& mount_point() const;
  const fs::path& device() const;
  // kind (and requested_kind), device, size_mib, mkfs_options, mount_options (requested and
  // as the kernel reports them), mkfs_version, and per kind: loop backing_file and
  // direct_io, zram comp_algorithm, brd loaded_by_us.
  nlohmann::json describe() const;

 private:
  struct State;
  explicit Filesystem(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace ks::storage

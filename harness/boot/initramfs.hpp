#pragma once
// The hermetic initramfs of a QEMU run: busybox, the static agent, the programs the guest
// needs (mkfs.btrfs, fio) with the shared libraries the dynamic loader lists for them, the
// fio job files, the guest init and the plan. Nothing from the host is mounted into the
// guest: what it runs is exactly what is in this archive, and its SHA-256 identifies it.
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace ks::boot {

namespace fs = std::filesystem;

inline constexpr const char* kBusybox = "/bin/busybox";  // Debian's busybox-static

struct InitramfsSpec {
  fs::path busybox = kBusybox;        // static; applets as symlinks
  fs::path agent;                     // static ksandwich-agent -> /usr/bin/ksandwich-agent
  std::vector<fs::path> programs;     // host paths of dynamic programs, copied to the same path
  fs::path fio_jobs_dir;              // *.fio -> /ksandwich/fio/ (skipped when empty)
  // Further files as they are: host path -> absolute path in the archive (bare metal: the
  // lab kernel a test kernel kexecs back into).
  std::vector<std::pair<fs::path, fs::path>> files;
  std::string init_script;            // -> /init
  std::string plan;                   // -> /ksandwich/plan.sh
};

struct Initramfs {
  fs::path path;
  std::string sha256;
  uint64_t size_bytes = 0;
  std::vector<std::string> files;  // every path in the archive, sorted
};

// Assembles SPEC in a staging directory next to OUT, packs it with `cpio -H newc` (not
// compressed) and removes the staging directory. Deterministic: the same inputs give the
// same bytes (sorted entries, owner 0:0, mtimes 0). Throws UserError
// when an input is missing, SystemError when a command fails.
Initramfs build_initramfs(const InitramfsSpec& spec, const fs::path& out);

// The shared objects a program loads, from the output of `ldd PROGRAM`: every absolute
// path, including the dynamic loader itself; the vDSO (no file) is left out. Pure.
// Throws UserError when ldd reports a library "not found". The guest's loader finds
// them where the host's did: its default directories and the libraries' RUNPATH.
std::vector<fs::path> parse_ldd(const std::string& ldd_output);

}  // namespace ks::boot

#pragma once
// `ksandwich doctor`: what this machine can do and what is missing, with the fix.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

namespace ks::machine {

struct Check {
  std::string name;
  bool ok = false;
  bool required = false;  // the host sandwich cannot run without it
  bool main_job = false;  // the QEMU sandwich (the main job) cannot run without it
  std::string detail;     // what was found
  std::string fix;        // what to do when it is missing
  bool bare_metal = false;  // the baremetal backend cannot run without it
  bool advice = false;      // a state to mind (load, space), not a thing the machine lacks
};

// How to get the Debian PACKAGE: from a source tree (SOURCE_TREE) tools/setup.sh installs
// everything the runs need; an installed ksandwich has no tools/, so it is the apt-get line.
std::string install_hint(const std::string& package, bool source_tree);

// Whether DATA_DIR (cli::Context::repo_dir) is a source tree, with its tools/setup.sh.
bool is_source_tree(const std::filesystem::path& data_dir);

// Throws UserError when PROGRAM (from the Debian PACKAGE) is not on the PATH, saying WHY it
// is needed and how to install it (DATA_DIR as for is_source_tree).
void require_program(const std::string& program, const std::string& package, const std::string& why,
                     const std::filesystem::path& data_dir);

// How busy the machine is: the 1-minute load, the first field of LOADAVG (/proc/loadavg),
// against its CPUS; ok below half of them. Load stretches every point's wall time (a TCG
// guest's too, though not the instructions it counts) and is noise on the clocks of the host
// and bare-metal backends. Pure.
Check load_check(std::string_view loadavg, unsigned cpus);

// Room for the kernel cache: FREE_BYTES free on the filesystem of CACHE (nullopt: unknown).
// ok from 3 GiB: a cold main job unpacks the source (1.3 GiB) and builds two kernels (0.3 GiB
// each) and their compiler cache. Pure.
Check cache_space_check(const std::filesystem::path& cache, std::optional<std::uintmax_t> free_bytes);

// The free bytes on the filesystem that holds PATH, or would hold it once made (its nearest
// existing parent); nullopt when that cannot be read.
std::optional<std::uintmax_t> free_bytes(const std::filesystem::path& path);

// The machine's checks (tracing is checked by the caller with trace::probe_tracing).
// SOURCE_TREE: ksandwich runs from its source tree, where tools/setup.sh installs every
// package; installed (<prefix>/share/ksandwich), a fix names the apt-get line instead.
std::vector<Check> doctor_checks(bool source_tree);

}  // namespace ks::machine

#include "experiment/backends.hpp"

#include "experiment/experiment.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::experiment {

const std::vector<BackendRules>& backend_table() {
  static const std::vector<BackendRules> kTable = {
      // The kernel booted now: arms differ only by mkfs/mount options and sysfs knobs.
      {"host", false, {"auto", "brd", "zram", "loop", "device"},
       "on the host use a RAM device (\"auto\", \"brd\", \"zram\", \"loop\") or name the drive with kind \"device\""},
      // Each arm's kernel, booted in a fresh QEMU guest for every point.
      {"qemu", true, {"auto", "brd", "nvme"},
       "use \"storage\": {\"kind\": \"brd\"} (a RAM disk in the guest) or \"nvme\" (an emulated drive "
       "backed by a file)",
       false, false, true},
      // Each arm's kernel, kexec'd into on this machine for every point ("baremetal": {...}).
      {"baremetal", true, {"auto", "brd", "device"},
       "use \"storage\": {\"kind\": \"brd\"} (a RAM disk in the test kernel) or name a drive with kind "
       "\"device\" and allow_overwrite",
       true, true},
  };
  return kTable;
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (auto& b : backend_table()) names.push_back(b.name);
  return names;
}

const BackendRules& backend_rules(const std::string& name) {
  for (auto& b : backend_table())
    if (b.name == name) return b;
  throw UserError("backend '" + name + "' does not exist", "use one of: " + join(backend_names(), ", "));
}

void require_one_run_per_process(const Experiment& e, const std::string& command) {
  if (backend_rules(e.backend).leaves_process)
    throw UserError("`ksandwich " + command + "` cannot drive the " + e.backend + " backend: each point switches " +
                        "the machine's kernel and ends this process, and the boot hook goes on with one run only",
                    "run the experiment with `ksandwich run` on the lab machine");
}

}  // namespace ks::experiment

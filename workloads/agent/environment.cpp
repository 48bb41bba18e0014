#include "agent/environment.hpp"

#include <unistd.h>

#include <filesystem>

#include "proc/runner.hpp"
#include "util/error.hpp"

namespace ks::agent {

void check_environment(const Options& o) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto status = fs::status(o.dir, ec);
  if (!fs::exists(status))
    throw UserError("--dir " + o.dir + " does not exist",
                    "mount the filesystem under test there (or create the directory) and retry");
  if (!fs::is_directory(status))
    throw UserError("--dir " + o.dir + " is not a directory",
                    "give the directory where the filesystem under test is mounted");
  if (access(o.dir.c_str(), W_OK | X_OK) != 0)
    throw UserError("--dir " + o.dir + " is not writable by this user",
                    "run as root or give a writable directory");

  if (o.workload == WorkloadKind::Fio) {
    auto job = fs::status(o.job, ec);
    if (!fs::exists(job))
      throw UserError("fio job file " + o.job + " does not exist",
                      "give --job a file such as workloads/fio/dio-randwrite.fio");
    if (!fs::is_regular_file(job))
      throw UserError("fio job file " + o.job + " is not a regular file", "give --job an fio job file");
    if (!proc::have_program(o.fio))
      throw UserError("fio not found (--fio " + o.fio + ")",
                      "install fio (apt-get install fio) or give its path with --fio PATH");
  }
}

}  // namespace ks::agent

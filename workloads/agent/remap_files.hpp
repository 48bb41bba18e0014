#pragma once
// The two files of a clone or dedupe round (design.md, "Workload shape"): the source holds
// OPS ranges of deterministic data; the destination is either one hole of the same size
// (clone: every clone lands in a hole) or the same data (dedupe: every range matches).
// Both are written and fsynced before the timer starts, and removed after the round.
#include <cerrno>
#include <cstdint>
#include <string>

#include "agent/scratch.hpp"

namespace ks::agent {

class RemapFiles {
 public:
  enum class Destination { Hole, SameData };

  RemapFiles(const fs::path& dir, const std::string& name, uint64_t bytes, Destination destination);
  ~RemapFiles();  // closes and removes both files, then syncs the filesystem
  RemapFiles(const RemapFiles&) = delete;
  RemapFiles& operator=(const RemapFiles&) = delete;

  int source() const { return source_fd_.get(); }
  int destination() const { return destination_fd_.get(); }

 private:
  fs::path dir_, source_path_, destination_path_;
  Fd source_fd_, destination_fd_;
};

// Errnos that mean "this filesystem cannot clone/dedupe at all", not "this op failed".
inline bool means_unsupported(int err) {
  return err == EOPNOTSUPP || err == ENOTTY || err == EXDEV || err == EINVAL || err == ENOSYS;
}

}  // namespace ks::agent

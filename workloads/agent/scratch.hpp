#pragma once
// The files a round makes on the filesystem under test: opened, filled with deterministic
// data, fsynced, and removed again. Set-up and clean-up only: nothing here is timed.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <vector>

#include "agent/data.hpp"

namespace ks::agent {

namespace fs = std::filesystem;

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset();

 private:
  int fd_ = -1;
};

// open(2) that throws SystemError naming the file.
Fd open_file(const fs::path& path, int flags, mode_t mode = 0644);

// Appends BYTES of DATA's stream in 1 MiB writes (the C reference writes the same way).
void write_data(int fd, const fs::path& path, uint64_t bytes, SplitMix64& data);

void fsync_file(int fd, const fs::path& path);

// Unlinks the files, then syncfs(DIR) so the next round starts on a settled filesystem.
// Never throws: clean-up after a failed round must not hide the round's own error.
void remove_and_sync(const fs::path& dir, const std::vector<fs::path>& files);

// Every regular file directly inside DIR (the agent's NOCOW scratch directory).
std::vector<fs::path> regular_files_in(const fs::path& dir);

// Creates DIR (if missing) with btrfs' NOCOW attribute, set with FS_IOC_SETFLAGS like
// `chattr +C` (busybox has no chattr). Files created in it inherit NOCOW.
// Throws Unsupported when the filesystem has no such attribute.
void make_nocow_dir(const fs::path& dir);

// True when FS_IOC_GETFLAGS shows FS_NOCOW_FL on the open file.
bool is_nocow(int fd);

}  // namespace ks::agent

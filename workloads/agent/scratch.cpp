#include "agent/scratch.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "agent/workload.hpp"
#include "util/error.hpp"

namespace ks::agent {

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Fd open_file(const fs::path& path, int flags, mode_t mode) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) throw SystemError("open " + path.string(), errno);
  return Fd(fd);
}

void write_data(int fd, const fs::path& path, uint64_t bytes, SplitMix64& data) {
  constexpr size_t kChunk = 1 << 20;
  auto buffer = std::make_unique<std::byte[]>(kChunk);
  while (bytes > 0) {
    size_t n = bytes < kChunk ? static_cast<size_t>(bytes) : kChunk;
    data.fill({buffer.get(), n});
    ssize_t written = ::write(fd, buffer.get(), n);
    if (written < 0) throw SystemError("write " + path.string(), errno);
    if (static_cast<size_t>(written) != n)
      throw SystemError("write " + path.string(), "short write of " + std::to_string(written) +
                                                      " of " + std::to_string(n) + " bytes");
    bytes -= n;
  }
}

void fsync_file(int fd, const fs::path& path) {
  if (::fsync(fd) != 0) throw SystemError("fsync " + path.string(), errno);
}

void remove_and_sync(const fs::path& dir, const std::vector<fs::path>& files) {
  for (auto& f : files) ::unlink(f.c_str());
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::syncfs(fd);
    ::close(fd);
  }
}

std::vector<fs::path> regular_files_in(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file(ec)) files.push_back(entry.path());
  return files;
}

void make_nocow_dir(const fs::path& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) throw SystemError("mkdir " + dir.string(), errno);
  Fd fd = open_file(dir, O_RDONLY | O_DIRECTORY);
  int flags = 0;  // the kernel reads and writes an int, whatever the ioctl's declared type
  if (::ioctl(fd.get(), FS_IOC_GETFLAGS, &flags) != 0)
    throw Unsupported("cannot read the attributes of " + dir.string() + " (FS_IOC_GETFLAGS: " +
                      std::strerror(errno) + "); this workload needs btrfs");
  flags |= FS_NOCOW_FL;
  if (::ioctl(fd.get(), FS_IOC_SETFLAGS, &flags) != 0)
    throw Unsupported("cannot set NOCOW on " + dir.string() + " (FS_IOC_SETFLAGS: " +
                      std::strerror(errno) + "); this workload needs btrfs");
  if (!is_nocow(fd.get()))
    throw Unsupported("NOCOW did not stick on " + dir.string() + "; this workload needs btrfs");
}

bool is_nocow(int fd) {
  int flags = 0;
  return ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && (flags & FS_NOCOW_FL) != 0;
}

}  // namespace ks::agent

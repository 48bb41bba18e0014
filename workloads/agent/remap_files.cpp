#include "agent/remap_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "util/error.hpp"

namespace ks::agent {

RemapFiles::RemapFiles(const fs::path& dir, const std::string& name, uint64_t bytes,
                       Destination destination)
    : dir_(dir), source_path_(dir / ("ks-" + name + "-src")), destination_path_(dir / ("ks-" + name + "-dst")) {
  try {
    source_fd_ = open_file(source_path_, O_RDWR | O_CREAT | O_TRUNC);
    SplitMix64 data(kSeed);
    write_data(source_fd_.get(), source_path_, bytes, data);
    fsync_file(source_fd_.get(), source_path_);

    destination_fd_ = open_file(destination_path_, O_RDWR | O_CREAT | O_TRUNC);
    if (destination == Destination::Hole) {
      if (::ftruncate(destination_fd_.get(), static_cast<off_t>(bytes)) != 0)
        throw SystemError("ftruncate " + destination_path_.string(), errno);
    } else {
      SplitMix64 same(kSeed);
      write_data(destination_fd_.get(), destination_path_, bytes, same);
    }
    fsync_file(destination_fd_.get(), destination_path_);
  } catch (...) {
    source_fd_.reset();
    destination_fd_.reset();
    remove_and_sync(dir_, {source_path_, destination_path_});
    throw;
  }
}

RemapFiles::~RemapFiles() {
  source_fd_.reset();
  destination_fd_.reset();
  remove_and_sync(dir_, {source_path_, destination_path_});
}

}  // namespace ks::agent

#include "boot/baremetal/kexec.hpp"

#include <fcntl.h>
#include <linux/kexec.h>
#include <sys/reboot.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "util/error.hpp"

namespace ks::boot::kexec {
namespace {

long kexec_file_load(int kernel_fd, int initrd_fd, const std::string& cmdline, unsigned long flags) {
  return syscall(SYS_kexec_file_load, kernel_fd, initrd_fd, cmdline.size() + 1, cmdline.c_str(), flags);
}

std::string why(int err) {
  switch (err) {
    case ENOSYS: return "this kernel has no kexec_file_load (CONFIG_KEXEC_FILE)";
    case EPERM:
      return "kexec_file_load is not permitted: not root, kernel.kexec_load_disabled = 1, or lockdown "
             "(Secure Boot) asks for a signed kernel";
    case EKEYREJECTED:
    case ENOKEY:
    case EBADMSG: return "the kernel's signature was rejected (lockdown wants kernels signed by a trusted key)";
    case ENOEXEC: return "not a kernel image kexec can load (a relocatable 64-bit bzImage)";
    default: return std::strerror(err);
  }
}

class Fd {
 public:
  explicit Fd(const fs::path& path) : fd_(open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) throw SystemError("open " + path.string(), errno);
  }
  ~Fd() { close(fd_); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

void load(const fs::path& kernel, const std::optional<fs::path>& initrd, const std::string& cmdline) {
  Fd k(kernel);
  std::optional<Fd> i;
  if (initrd) i.emplace(*initrd);
  if (kexec_file_load(k.get(), i ? i->get() : -1, cmdline, i ? 0 : KEXEC_FILE_NO_INITRAMFS) != 0) {
    int err = errno;
    throw SystemError("kexec_file_load " + kernel.string(), why(err));
  }
}

void unload() { kexec_file_load(-1, -1, "", KEXEC_FILE_UNLOAD); }

std::optional<std::string> unavailable() {
  // A kernel staged already (by whoever) proves it, and asking by unloading would drop it.
  if (std::ifstream("/sys/kernel/kexec_loaded").get() == '1') return std::nullopt;
  if (kexec_file_load(-1, -1, "", KEXEC_FILE_UNLOAD) == 0) return std::nullopt;
  return why(errno);
}

void reboot_into_loaded() {
  sync();
  reboot(RB_KEXEC);
  int err = errno;
  throw SystemError("reboot(RB_KEXEC)", why(err));
}

}  // namespace ks::boot::kexec

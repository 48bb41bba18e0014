#pragma once
// Switching kernels with kexec_file_load(2): the lab machine into an arm's kernel, and a
// test kernel back into the lab's. Also compiled into ksandwich-agent (the test kernel's
// way back), so it needs nothing beyond util/error.
#include <filesystem>
#include <optional>
#include <string>

namespace ks::boot::kexec {

namespace fs = std::filesystem;

// Loads KERNEL (a bzImage) with INITRD (none: empty) and CMDLINE as the kernel the next
// kexec reboot starts. Throws SystemError saying why the kernel refused (lockdown, a
// missing signature, not a bzImage, not root).
void load(const fs::path& kernel, const std::optional<fs::path>& initrd, const std::string& cmdline);

// Unloads whatever load() loaded; never throws.
void unload();

// Whether this kernel lets this process call kexec_file_load: nullopt when it does, else why
// not (the kernel lacks CONFIG_KEXEC_FILE, lockdown or kexec_load_disabled forbid it, not
// root). Asks the kernel itself by unloading (which loads nothing), unless a kernel is
// staged already (/sys/kernel/kexec_loaded), which it leaves alone.
std::optional<std::string> unavailable();

// Starts the loaded kernel now: sync(2), then reboot(2) with RB_KEXEC. Returns only when the
// kernel refused; throws SystemError then.
[[noreturn]] void reboot_into_loaded();

}  // namespace ks::boot::kexec

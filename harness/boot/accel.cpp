#include "boot/accel.hpp"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "machine/machine.hpp"
#include "proc/runner.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"
#include "util/ownership.hpp"

namespace ks::boot {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const std::string kQemu = "qemu-system-x86_64";
// A guest that runs exits at once; one that never runs (a stalled vCPU) is given this long.
constexpr auto kProbeTimeout = 15s;

struct ProbeOutcome {
  bool ran = false;
  std::string message;
};

std::string first_line_of(const std::string& text) {
  auto lines = split(trim(text), '\n');
  return lines.empty() ? std::string() : trim(lines.front());
}

constexpr auto kKernelProbeTimeout = 30s;

std::string what_qemu_said(const proc::Result& result) {
  auto how = result.term_signal ? "was killed by signal " + std::to_string(result.term_signal)
                                : "exited " + std::to_string(result.exit_code);
  auto said = trim(result.err + "\n" + result.out);
  std::string tail = said.size() > 400 ? said.substr(0, 400) + "..." : said;
  return "QEMU under KVM " + how + (tail.empty() ? std::string() : ": " + tail);
}

ProbeOutcome run_firmware_probe(const std::string& qemu) {
  auto dir = ScopedDir::temporary("ksandwich-accel-probe-");
  auto firmware = dir.path() / "probe.bin";
  write_file(firmware, probe_firmware());
  auto result = proc::run(proc::command(probe_argv(qemu, "kvm", firmware), kProbeTimeout));
  if (result.exit_code == kProbeExitCode && !result.timed_out) return {true, "a firmware guest ran"};
  if (result.timed_out)
    return {false, "QEMU started under KVM but the firmware guest did not run within " +
                       std::to_string(kProbeTimeout.count()) + " s"};
  return {false, what_qemu_said(result)};
}

ProbeOutcome run_kernel_probe(const std::string& qemu, const fs::path& kernel) {
  auto dir = ScopedDir::temporary("ksandwich-accel-probe-");
  auto console = dir.path() / "console.log";
  auto result = proc::run(proc::command(kernel_probe_argv(qemu, "kvm", kernel, console), kKernelProbeTimeout));
  auto printed = try_read_file(console).value_or("");
  const bool booted = printed.find("Linux version") != std::string::npos;
  if (booted && !result.timed_out) return {true, "a Linux guest booted"};
  if (result.timed_out)
    return {false, std::string("QEMU ran under KVM but the Linux guest ") +
                       (booted ? "did not finish booting" : "printed nothing") + " within " +
                       std::to_string(kKernelProbeTimeout.count()) + " s"};
  return {false, what_qemu_said(result)};
}

std::string qemu_identity(const fs::path& binary) {
  auto r = proc::run(proc::command({binary.string(), "--version"}, 30s));
  return binary.string() + " " + first_line_of(r.out);
}

// What QEMU said, as one bounded line: a remembered file is read back in the same form.
std::string printable_message(const std::string& message) { return one_line(message.substr(0, 1000)); }

// The probe's answer, remembered per host kernel, KVM device, QEMU binary and version, CPU
// model and probe.
ProbeOutcome probe_kvm(const fs::path& cache_dir, const std::optional<fs::path>& kernel, bool& remembered) {
  auto qemu = proc::find_program(kQemu);
  if (!qemu) throw UserError(kQemu + " not found", "apt-get install qemu-system-x86 (tools/setup.sh)");
  auto key = sha256_hex(machine::kernel_release() + "\n" + machine::kvm_device() + "\n" + qemu_identity(*qemu) +
                        "\n" + cpu_model("kvm") + "\n" + (kernel ? "kernel " + sha256_file(*kernel) : "firmware"))
                 .substr(0, 16);
  auto file = cache_dir.empty() ? fs::path() : cache_dir / "accel" / (key + ".json");
  remembered = false;
  if (!file.empty()) {
    if (auto text = read_cache_file(file, size_t(1) << 20)) {
      auto j = json::parse(*text, nullptr, false);
      if (j.is_object() && j.value("ran", json()).is_boolean() && j.value("message", json()).is_string()) {
        remembered = true;
        return {j["ran"].get<bool>(), printable_message(j["message"].get<std::string>())};
      }
    }
  }
  auto outcome = kernel ? run_kernel_probe(qemu->string(), *kernel) : run_firmware_probe(qemu->string());
  outcome.message = printable_message(outcome.message);  // one form, whether probed now or remembered
  if (!file.empty()) {
    try {  // remembering is a saving, not a need: a cache we cannot write changes nothing
      fs::create_directories(file.parent_path());
      write_file_atomic(file, json{{"ran", outcome.ran},
                                   {"message", outcome.message},
                                   {"host_kernel", machine::kernel_release()},
                                   {"kvm_device", machine::kvm_device()},
                                   {"qemu", qemu_identity(*qemu)},
                                   {"probed_at", now_utc_iso8601()}}
                                  .dump(2));
    } catch (const std::exception&) {
    }
  }
  return outcome;
}

}  // namespace

std::string probe_firmware() {
  std::string image(64 * 1024, '\0');
  // At reset the CPU fetches from 0xFFFFFFF0, the firmware's last 16 bytes (real mode).
  const unsigned char code[] = {0xB0, 0x2A,   // mov al, 0x2a
                                0xE6, 0xF4,   // out 0xf4, al  (isa-debug-exit)
                                0xF4,         // hlt
                                0xEB, 0xFD};  // jmp back to hlt
  image.replace(image.size() - 16, sizeof code, reinterpret_cast<const char*>(code), sizeof code);
  return image;
}

std::string cpu_model(const std::string& accel) { return accel == "kvm" ? "host" : "max"; }

std::vector<std::string> probe_argv(const std::string& qemu, const std::string& accel,
                                    const fs::path& firmware) {
  return {qemu,      "-nodefaults", "-no-user-config", "-display", "none",
          "-machine", "q35,accel=" + accel, "-cpu", cpu_model(accel), "-m", "16",
          "-bios",   firmware.string(),
          "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"};
}

std::vector<std::string> kernel_probe_argv(const std::string& qemu, const std::string& accel,
                                           const fs::path& kernel, const fs::path& console) {
  return {qemu,      "-nodefaults", "-no-user-config", "-display", "none",
          "-machine", "q35,accel=" + accel, "-cpu", cpu_model(accel), "-m", "256",
          "-kernel", kernel.string(),
          "-append", "console=ttyS0 panic=-1",
          "-serial", "file:" + console.string(), "-no-reboot"};
}

AccelChoice choose_accel(const std::string& requested, const fs::path& cache_dir,
                         const std::optional<fs::path>& kernel) {
  AccelChoice c;
  c.requested = requested;
  if (requested == "tcg") {
    c.accel = "tcg";
    c.reason = "the experiment asks for TCG";
    return c;
  }
  if (!machine::have_kvm()) {
    if (requested == "kvm")
      throw UserError("the experiment asks for KVM, but " + machine::kvm_device() + " is missing or cannot be opened",
                      "enable virtualization (modprobe kvm_intel or kvm_amd), or set \"qemu\": {\"accel\": \"auto\"}");
    c.accel = "tcg";
    c.reason = "no usable " + machine::kvm_device();
    return c;
  }
  auto outcome = probe_kvm(cache_dir, kernel, c.remembered);
  c.kvm_probe = outcome.message;
  if (outcome.ran) {
    c.accel = "kvm";
    c.reason = outcome.message + " under KVM";
    return c;
  }
  if (requested == "kvm")
    throw UserError("the experiment asks for KVM, but KVM cannot run a guest here: " + outcome.message,
                    "nested virtualization often exposes a /dev/kvm that cannot run guests; set \"qemu\": "
                    "{\"accel\": \"auto\"} (falls back to TCG) or run on a machine with working KVM");
  c.accel = "tcg";
  c.reason = machine::kvm_device() + " opens but cannot run a guest (" + outcome.message + ")";
  return c;
}

}  // namespace ks::boot

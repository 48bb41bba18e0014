#include "boot/backend.hpp"

#include <functional>
#include <map>

#include "boot/baremetal/baremetal.hpp"
#include "boot/host.hpp"
#include "boot/qemu.hpp"
#include "util/error.hpp"

namespace ks::boot {

// How each backend of experiment::backend_table() is made (a test checks both tables hold
// the same names).
std::unique_ptr<Backend> make_backend(const std::string& name, const BackendOptions& options) {
  static const std::map<std::string, std::function<std::unique_ptr<Backend>(const BackendOptions&)>>
      kBackends = {
          {"host", [](const BackendOptions& o) { return std::make_unique<HostBackend>(o); }},
          {"qemu", [](const BackendOptions& o) { return std::make_unique<QemuBackend>(o); }},
          {"baremetal", [](const BackendOptions& o) { return std::make_unique<baremetal::BaremetalBackend>(o); }},
      };
  auto it = kBackends.find(name);
  if (it == kBackends.end())
    throw UserError("backend '" + name + "' is not available in this build",
                    "use \"backend\": \"host\"");
  return it->second(options);
}

}  // namespace ks::boot

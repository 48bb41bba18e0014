#include "agent/workload.hpp"

namespace ks::agent {

std::unique_ptr<Workload> make_workload(const Options& options) {
  switch (options.workload) {
    case WorkloadKind::Clone: return make_clone(options);
    case WorkloadKind::Dedupe: return make_dedupe(options);
    case WorkloadKind::DioRandwrite: return make_dio_randwrite(options);
    case WorkloadKind::BufferedWrite: return make_buffered_write(options);
    case WorkloadKind::Fio: return make_fio(options);
  }
  throw std::logic_error("unknown workload");
}

}  // namespace ks::agent

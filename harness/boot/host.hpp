#pragma once
#include "boot/backend.hpp"

namespace ks::boot {

class HostBackend : public Backend {
 public:
  explicit HostBackend(BackendOptions options);
  std::string name() const override { return "host"; }
  void check_machine(const experiment::Experiment& e) const override;
  nlohmann::json machine() override;
  PointResult run_point(const PointContext& context) override;
  // The agent's command per workload, the mount point shown as <mnt>.
  std::string describe_point(const PointContext& context) const override;

 private:
  BackendOptions options_;
};

}  // namespace ks::boot

#pragma once
#include "boot/backend.hpp"

namespace ks::boot {

class HostBackend : public Backend {
 public:
  explicit HostBackend(BackendOptions options);
  std::string name() const override { return "host"; }
  nlohmann::json machine() override;
  PointResult run_point(const PointContext& context) override;

 private:
  BackendOptions options_;
};

}  // namespace ks::boot

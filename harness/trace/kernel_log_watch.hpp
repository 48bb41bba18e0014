#pragma once
// Kernel health of one point on the host: a marker goes into the kernel log before the
// point, and afterwards everything the kernel logged after the marker is scanned.
//
//   ks::trace::KernelLogWatch watch;
//   watch.begin("point 3");              // "ksandwich: begin point 3 <random>" -> /dev/kmsg
//   ... boot-free point: mkfs, mount, rounds, direct-hit pass ...
//   nlohmann::json health = watch.end(); // {"marker", "scanned_lines", "findings", ...}
//
// Reads /dev/kmsg (structured records with sequence numbers, non-blocking, until EAGAIN), so
// the marker is found by its sequence number, and records overwritten before they could be
// read are counted: they become a "lost records" finding, since a WARNING may be among them.
// Failures are data, not exceptions: end() then returns {"marker", "error"}, which
// health_gates() turns into a failed gate.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "trace/kernel_log.hpp"

namespace ks::trace {

class KernelLogWatch {
 public:
  void begin(const std::string& tag);
  nlohmann::json end();
  const std::string& marker() const { return marker_; }

 private:
  std::string marker_;
  std::optional<uint64_t> marker_seq_;
  std::string error_;
};

// Every record /dev/kmsg still holds, oldest first; `overwritten` counts the records that
// were overwritten while reading (EPIPE). Throws SystemError.
struct KmsgRead {
  std::vector<KmsgRecord> records;
  uint64_t overwritten = 0;
};
KmsgRead read_kmsg();

}  // namespace ks::trace

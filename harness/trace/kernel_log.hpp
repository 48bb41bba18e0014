#pragma once
// Kernel health, the pure half: find WARNING/BUG/Oops/lockdep/btrfs errors in kernel log
// lines, and turn what was found into the bundle's `health` object and a gate. The lines may
// come from /dev/kmsg on the host (KernelLogWatch) or from a QEMU guest's dmesg text: the
// scanner strips "<4>", "[  12.345678]" and "[    T42]" prefixes itself.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evidence/bundle.hpp"

namespace ks::trace {

struct Finding {
  std::string kind;     // WARNING | BUG | Oops | lockdep | BTRFS error | ... | lost records
  std::string line;     // the line that matched, as given
  std::string excerpt;  // that line and what followed it, up to the next finding (bounded)
  size_t line_number = 0;  // 1-based, within the scanned lines
};

// Every finding, in log order. A splat is one finding: "Call Trace:" and "RIP:" lines only
// count on their own when no earlier finding's excerpt holds them.
std::vector<Finding> scan_kernel_log(const std::vector<std::string>& lines);

// The kernel log text a guest printed (dmesg output, a console log), split into lines.
std::vector<std::string> split_log_lines(std::string_view text);

// Lines after the last line holding MARKER; all lines when MARKER is empty; nullopt when
// MARKER is not there.
std::optional<std::vector<std::string>> lines_after_marker(const std::vector<std::string>& lines,
                                                           const std::string& marker);

// The bundle's points[].health: {"marker", "scanned_lines", "findings": [{"kind", "line",
// "excerpt", "line_number"}]} (at most kMaxFindings, "more_findings" counts the rest).
inline constexpr size_t kMaxFindings = 20;
nlohmann::json kernel_health(const std::string& marker, const std::vector<std::string>& lines);

// One "kernel_health" gate scoped "point N": failed when HEALTH holds findings or an
// "error" (the log could not be read), or is not a record kernel_health() writes (absent,
// edited): in each the point is not shown to be clean.
std::vector<evidence::Gate> health_gates(int point_id, const nlohmann::json& health);

// One /dev/kmsg record: "prio,seq,usec,flags[,...];message\n[ KEY=value\n]...".
struct KmsgRecord {
  int level = 0;         // 0 emerg .. 7 debug
  uint64_t seq = 0;
  uint64_t usec = 0;
  std::string message;   // \xNN escapes decoded; continuation lines dropped
};
std::optional<KmsgRecord> parse_kmsg_record(std::string_view record);

}  // namespace ks::trace

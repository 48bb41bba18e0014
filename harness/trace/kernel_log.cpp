#include "trace/kernel_log.hpp"

#include <fmt/format.h>

#include <charconv>

#include "analysis/gate_kind.hpp"

namespace ks::trace {
namespace {

using nlohmann::json;

// Where a pattern must stand. A headline opens the message, possibly after one
// "subsystem: " word ("watchdog: BUG: soft lockup"); that keeps informational lines that
// merely mention a word ("Spectre V2 : WARNING: Unprivileged eBPF is enabled") out.
enum class Where { headline, anywhere };

struct Pattern {
  std::string_view kind;
  std::string_view text;
  Where where;
  bool primary;  // secondary kinds are usually part of a primary one's splat
};

// First match wins, so the specific kinds come before the general ones (a lockdep report
// starts with "WARNING: possible circular locking dependency detected").
constexpr Pattern kPatterns[] = {
    {"lockdep", "possible circular locking dependency", Where::anywhere, true},
    {"lockdep", "possible recursive locking detected", Where::anywhere, true},
    {"lockdep", "inconsistent lock state", Where::anywhere, true},
    {"lockdep", "possible irq lock inversion dependency", Where::anywhere, true},
    {"lockdep", "suspicious RCU usage", Where::anywhere, true},
    {"lockdep", "bad unlock balance detected", Where::anywhere, true},
    {"lockdep", "held lock freed", Where::anywhere, true},
    {"lockdep", "lock held when returning to user space", Where::anywhere, true},
    {"lockdep", "DEBUG_LOCKS_WARN_ON", Where::anywhere, true},
    {"BUG", "kernel BUG at", Where::headline, true},
    {"BUG", "BUG:", Where::headline, true},
    {"Oops", "Oops", Where::headline, true},
    {"general protection fault", "general protection fault", Where::headline, true},
    {"panic", "Kernel panic", Where::headline, true},
    {"UBSAN", "UBSAN:", Where::headline, true},
    {"WARNING", "WARNING:", Where::headline, true},
    {"BTRFS critical", "BTRFS critical (", Where::headline, true},
    {"BTRFS error", "BTRFS error (", Where::headline, true},
    {"BTRFS error", "BTRFS: error (", Where::headline, true},
    {"BTRFS error", "BTRFS: Transaction aborted", Where::headline, true},
    {"hung task", "blocked for more than", Where::anywhere, true},
    {"RCU stall", "detected stalls on CPUs", Where::anywhere, true},
    {"RCU stall", "self-detected stall on CPU", Where::anywhere, true},
    {"Call Trace", "Call Trace:", Where::headline, false},
    {"RIP", "RIP:", Where::headline, false},
    {"lockdep", "lockdep is turned off", Where::anywhere, false},
};

constexpr size_t kExcerptLines = 24;     // the matching line and what follows it
constexpr size_t kExcerptChars = 4000;
constexpr size_t kSplatLines = 120;      // a splat's Call Trace/RIP are not findings of their own

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// The message without "<4>", "[   12.345678]", "[    T42]" and leading blanks.
std::string_view message_of(std::string_view line) {
  auto skip_blanks = [&] {
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  };
  skip_blanks();
  if (starts_with(line, "<")) {
    size_t end = line.find('>');
    if (end != std::string_view::npos && end <= 4) line.remove_prefix(end + 1);
  }
  for (int group = 0; group < 2; ++group) {
    skip_blanks();
    if (!starts_with(line, "[")) break;
    size_t end = line.find(']');
    if (end == std::string_view::npos || end > 24) break;
    line.remove_prefix(end + 1);
  }
  skip_blanks();
  return line;
}

bool headline(std::string_view message, std::string_view text) {
  if (starts_with(message, text)) return true;
  size_t colon = message.find(": ");
  if (colon == std::string_view::npos || colon == 0 || colon > 32) return false;
  if (message.substr(0, colon).find(' ') != std::string_view::npos) return false;
  return starts_with(message.substr(colon + 2), text);
}

const Pattern* match(std::string_view line) {
  auto message = message_of(line);
  for (auto& p : kPatterns) {
    bool hit = p.where == Where::headline ? headline(message, p.text)
                                          : message.find(p.text) != std::string_view::npos;
    if (hit) return &p;
  }
  return nullptr;
}

}  // namespace

std::vector<Finding> scan_kernel_log(const std::vector<std::string>& lines) {
  std::vector<Finding> findings;
  size_t covered_until = 0;       // end of the last excerpt
  size_t last_start = 0;          // line index of the last finding
  bool any = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const Pattern* p = match(lines[i]);
    if (!p) continue;
    if (!p->primary && (i < covered_until || (any && i - last_start < kSplatLines))) continue;

    Finding f;
    f.kind = std::string(p->kind);
    f.line = lines[i];
    f.line_number = i + 1;
    size_t j = i;
    for (; j < lines.size() && j < i + kExcerptLines; ++j) {
      if (j > i) {
        const Pattern* next = match(lines[j]);
        if (next && next->primary) break;  // the next event gets its own finding
      }
      if (f.excerpt.size() + lines[j].size() + 1 > kExcerptChars) break;
      f.excerpt += lines[j] + "\n";
      if (lines[j].find("---[ end trace") != std::string::npos) {
        ++j;
        break;
      }
    }
    if (f.excerpt.empty()) f.excerpt = lines[i].substr(0, kExcerptChars) + "\n";
    covered_until = std::max(covered_until, j);
    last_start = i;
    any = true;
    findings.push_back(std::move(f));
  }
  return findings;
}

std::vector<std::string> split_log_lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    auto line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.emplace_back(line);
    start = end + 1;
  }
  return lines;
}

std::optional<std::vector<std::string>> lines_after_marker(const std::vector<std::string>& lines,
                                                           const std::string& marker) {
  if (marker.empty()) return lines;
  for (size_t i = lines.size(); i-- > 0;)
    if (lines[i].find(marker) != std::string::npos)
      return std::vector<std::string>(lines.begin() + static_cast<long>(i) + 1, lines.end());
  return std::nullopt;
}

json kernel_health(const std::string& marker, const std::vector<std::string>& lines) {
  auto findings = scan_kernel_log(lines);
  json out{{"marker", marker}, {"scanned_lines", lines.size()}, {"findings", json::array()}};
  for (size_t i = 0; i < findings.size() && i < kMaxFindings; ++i) {
    auto& f = findings[i];
    out["findings"].push_back({{"kind", f.kind},
                               {"line", f.line},
                               {"excerpt", f.excerpt},
                               {"line_number", f.line_number}});
  }
  if (findings.size() > kMaxFindings) out["more_findings"] = findings.size() - kMaxFindings;
  return out;
}

std::vector<evidence::Gate> health_gates(int point_id, const json& health) {
  evidence::Gate g = analysis::make_gate(analysis::GateKind::kernel_health,
                                         analysis::point_scope(point_id), true, "");
  // Every backend checks the log of every point it finishes, so a record that is absent, or
  // not in the shape kernel_health() writes, is a log not shown to be clean (thirty-ninth
  // attack: `health: {}` hid an oops; a string for scanned_lines was an internal error).
  auto text = [](const json& j, const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? std::optional<std::string>(it->get<std::string>()) : std::nullopt;
  };
  auto count = [&](const char* key) {  // absent, or a whole number of at least 0
    auto v = health.value(key, json(0));
    return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
  };
  const json* findings = health.is_object() && health.contains("findings") ? &health["findings"] : nullptr;
  const bool well_formed =
      findings && findings->is_array() &&
      std::all_of(findings->begin(), findings->end(), [&](const json& f) { return f.is_object() && text(f, "kind") && text(f, "line"); }) &&
      count("scanned_lines") && count("more_findings");
  if (health.is_object() && text(health, "error")) {
    g.passed = false;
    g.detail = "the kernel log could not be checked: " + *text(health, "error");
  } else if (!well_formed) {
    g.passed = false;
    g.detail = "the point holds no record of its kernel log in the form ksandwich writes: the log is not shown to be clean";
  } else if (!findings->empty() || health.value("more_findings", json(0)) != json(0)) {
    // More than were kept, at most: a count no sum wraps (fortieth attack: 2^64 - 1 more
    // made one finding zero).
    const uint64_t more = health.value("more_findings", uint64_t{0});
    const uint64_t n = findings->size() + std::min<uint64_t>(more, uint64_t{1} << 40);
    g.passed = false;
    // More findings than were kept, none kept: no run writes that (forty-third attack), and it
    // says the log had findings.
    g.detail = findings->empty() ? fmt::format("{} finding{} in the kernel log during the point", n, n == 1 ? "" : "s")
                                 : fmt::format("{} finding{} in the kernel log during the point, first [{}] {}", n,
                                               n == 1 ? "" : "s", *text((*findings)[0], "kind"), *text((*findings)[0], "line"));
  } else {
    g.detail = fmt::format("kernel log clean ({} lines scanned)", health.value("scanned_lines", uint64_t{0}));
  }
  return {g};
}

std::optional<KmsgRecord> parse_kmsg_record(std::string_view record) {
  size_t semi = record.find(';');
  if (semi == std::string_view::npos) return std::nullopt;
  auto header = record.substr(0, semi);
  uint64_t fields[3] = {0, 0, 0};
  for (int k = 0; k < 3; ++k) {
    size_t comma = header.find(',');
    auto field = header.substr(0, comma);
    auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), fields[k]);
    if (ec != std::errc() || end != field.data() + field.size()) return std::nullopt;
    if (comma == std::string_view::npos) {
      if (k < 2) return std::nullopt;
      break;
    }
    header.remove_prefix(comma + 1);
  }
  KmsgRecord r;
  r.level = static_cast<int>(fields[0] & 7);
  r.seq = fields[1];
  r.usec = fields[2];
  auto text = record.substr(semi + 1);
  text = text.substr(0, text.find('\n'));  // " KEY=value" continuation lines follow
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size() && text[i + 1] == 'x' && hex(text[i + 2]) >= 0 &&
        hex(text[i + 3]) >= 0) {
      r.message += static_cast<char>(hex(text[i + 2]) * 16 + hex(text[i + 3]));
      i += 3;
    } else {
      r.message += text[i];
    }
  }
  return r;
}

}  // namespace ks::trace

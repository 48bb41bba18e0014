#include "kernel/audit.hpp"

#include "util/files.hpp"

namespace ks::kernel {
namespace {

using nlohmann::json;

std::string text_at(const json& j, const char* pointer) {
  auto p = json::json_pointer(pointer);
  if (!j.is_object() || !j.contains(p)) return {};
  const auto& v = j.at(p);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::vector<std::string> parts;
    for (auto& e : v) parts.push_back(e.is_string() ? e.get<std::string>() : e.dump());
    return join(parts, " ");
  }
  if (v.is_null()) return {};
  return v.dump();
}

std::string source_identity(const json& id) {
  auto sha = text_at(id, "/source/archive_sha256");
  if (!sha.empty()) return "sha256:" + sha;
  auto commit = text_at(id, "/source/commit");
  return commit.empty() ? "" : "git:" + commit;
}

// The release without the arm's LOCALVERSION suffix: "6.1.192-ks-patched" -> "6.1.192"; the
// whole release when that would leave nothing (sixty-third attack: a LOCALVERSION that was the
// whole release made any two releases equal).
std::string release_base(const json& id) {
  auto release = text_at(id, "/kernel_release");
  auto local = text_at(id, "/kbuild/localversion");
  if (!local.empty() && release.size() > local.size() &&
      release.compare(release.size() - local.size(), local.size(), local) == 0)
    return release.substr(0, release.size() - local.size());
  return release;
}

// Equal, and there: a field both identities lack matches nothing (sixty-third attack: two
// empty builds passed every row as "-" and "-").
AuditLine must_match(const std::string& field, std::string control, std::string patched) {
  std::string status = control == patched && !control.empty() ? "PASS" : "FAIL";
  return {{field, status, control.empty() ? "-" : control, patched.empty() ? "-" : patched}, {}};
}

AuditLine may_differ(const std::string& field, std::string control, std::string patched) {
  std::string note = control == patched ? "identical" : "expected to differ";
  return {{field, "PASS", control.empty() ? "-" : control, patched.empty() ? "-" : patched}, note};
}

}  // namespace

std::string describe_patches(const json& identity) {
  if (!identity.is_object() || !identity.contains("patches") || identity["patches"].empty())
    return "none";
  std::vector<std::string> parts;
  for (auto& p : identity["patches"]) {
    auto file = p.value("file", std::string{});
    auto slash = file.rfind('/');
    if (slash != std::string::npos) file = file.substr(slash + 1);
    auto count = p.value("count", 1);
    if (count > 1) file += "#" + std::to_string(p.value("index", 1));
    parts.push_back(file + " sha256:" + p.value("sha256", std::string{}).substr(0, 12) + " " +
                    p.value("subject", std::string{}));
  }
  return join(parts, "; ");
}

std::vector<AuditLine> audit_lines(const json& c, const json& p, bool later_commit) {
  std::vector<AuditLine> out;
  auto same = [&](const std::string& field, const char* pointer) {
    out.push_back(must_match(field, text_at(c, pointer), text_at(p, pointer)));
  };
  same("source version", "/source/version");
  out.push_back(must_match("source archive SHA-256 / commit", source_identity(c),
                           source_identity(p)));
  // A later commit may bring new Kconfig symbols and a new version in the .config header.
  auto commit = text_at(p, "/commit/sha");
  if (!later_commit) {
    same("config SHA-256 (normalized)", "/config/sha256");
  } else {
    auto config = may_differ("config SHA-256 (normalized)", text_at(c, "/config/sha256"), text_at(p, "/config/sha256"));
    if (config.note == "expected to differ") config.note = "may differ (the patched arm is a later commit)";
    out.push_back(config);
  }
  same("compiler", "/toolchain/compiler");
  same("linker", "/toolchain/linker");
  out.push_back(must_match("compiler flags (make variables)",
                           text_at(c, "/toolchain/make_variables").empty()
                               ? "none" : text_at(c, "/toolchain/make_variables"),
                           text_at(p, "/toolchain/make_variables").empty()
                               ? "none" : text_at(p, "/toolchain/make_variables")));
  same("KBUILD_BUILD_TIMESTAMP", "/kbuild/timestamp");
  same("KBUILD_BUILD_USER", "/kbuild/user");
  same("KBUILD_BUILD_HOST", "/kbuild/host");
  same("KBUILD_BUILD_VERSION", "/kbuild/version");

  // The release must differ only by the arm's LOCALVERSION.
  auto release = may_differ("kernel release", text_at(c, "/kernel_release"),
                            text_at(p, "/kernel_release"));
  if (release_base(c) != release_base(p) && later_commit) {
    release.note = "expected to differ (the patched arm is a later commit)";
  } else if (release_base(c) != release_base(p)) {
    release.row.status = "FAIL";
    release.note = "differs beyond LOCALVERSION";
  } else if (release.note == "expected to differ") {
    release.note = "expected to differ (LOCALVERSION names the arm)";
  }
  out.push_back(release);
  if (later_commit || !commit.empty()) {
    auto line = may_differ("commit", text_at(c, "/source/commit"),
                           commit.empty() ? "" : commit + " " + text_at(p, "/commit/subject"));
    if (later_commit != !commit.empty()) {
      line.row.status = "FAIL";
      line.note = later_commit ? "the experiment builds a later commit, the patched kernel names none"
                               : "the patched kernel is a commit the experiment does not name";
    }
    out.push_back(line);
  }
  out.push_back(may_differ("patches", describe_patches(c), describe_patches(p)));
  out.push_back(may_differ("bzImage SHA-256", text_at(c, "/bzimage/sha256"),
                           text_at(p, "/bzimage/sha256")));
  return out;
}

std::vector<evidence::AuditRow> audit(const json& control, const json& patched, bool later_commit) {
  std::vector<evidence::AuditRow> out;
  for (auto& line : audit_lines(control, patched, later_commit)) out.push_back(line.row);
  return out;
}

json audit_json(const json& control, const json& patched, bool later_commit) {
  json rows = json::array();
  for (auto& line : audit_lines(control, patched, later_commit)) {
    json row{{"field", line.row.field},
             {"status", line.row.status},
             {"control", line.row.control},
             {"patched", line.row.patched}};
    if (!line.note.empty()) row["note"] = line.note;
    rows.push_back(row);
  }
  return rows;
}

json builds_json(const json& control, const json& patched, bool later_commit) {
  auto lines = audit_lines(control, patched, later_commit);
  return {{"control", control},
          {"patched", patched},
          {"audit", audit_json(control, patched, later_commit)},
          {"matched", all_pass(lines)}};
}

bool all_pass(const std::vector<AuditLine>& lines) {
  for (auto& l : lines)
    if (l.row.status != "PASS") return false;
  return true;
}

}  // namespace ks::kernel

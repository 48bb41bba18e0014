#include <catch2/catch.hpp>

#include "kernel/audit.hpp"

using nlohmann::json;
using namespace ks::kernel;

namespace {

json identity(const std::string& arm) {
  return {{"arm", arm},
          {"source", {{"kind", "debian"}, {"version", "6.1.192"},
                      {"archive_sha256", "aaaa"}, {"commit", ""}}},
          {"config", {{"sha256", "cccc"}}},
          {"toolchain", {{"compiler", "gcc (Debian 12.2.0-14+deb12u1) 12.2.0"},
                         {"linker", "GNU ld (GNU Binutils for Debian) 2.40"},
                         {"make_variables", json::array()}}},
          {"kbuild", {{"timestamp", "Sat Jan  1 00:00:00 UTC 2000"}, {"user", "ksandwich"},
                      {"host", "ksandwich"}, {"version", "1"}, {"localversion", "-ks-" + arm}}},
          {"kernel_release", "6.1.192-ks-" + arm},
          {"patches", json::array()},
          {"bzimage", {{"sha256", arm == "control" ? "b1" : "b2"}}}};
}

json patched_identity() {
  auto p = identity("patched");
  p["patches"] = json::array({{{"file", "kernel-patches/btrfs-drop-sb-nosec.patch"},
                               {"sha256", "0123456789abcdef0123"},
                               {"subject", "[PATCH] btrfs: drop SB_NOSEC"},
                               {"index", 1}, {"count", 1}}});
  return p;
}

const AuditLine& row(const std::vector<AuditLine>& lines, const std::string& field) {
  for (auto& l : lines)
    if (l.row.field == field) return l;
  FAIL("no audit row " << field);
  return lines.front();
}

}  // namespace

TEST_CASE("matched builds pass every row, patches, release and bzImage may differ", "[build][audit]") {
  auto lines = audit_lines(identity("control"), patched_identity(), false);
  CHECK(all_pass(lines));
  CHECK(lines.size() == 13);
  for (auto& l : lines) CHECK(l.row.status == "PASS");
  CHECK(row(lines, "patches").note == "expected to differ");
  CHECK(row(lines, "patches").row.control == "none");
  CHECK(row(lines, "patches").row.patched ==
        "btrfs-drop-sb-nosec.patch sha256:0123456789ab [PATCH] btrfs: drop SB_NOSEC");
  CHECK(row(lines, "kernel release").row.control == "6.1.192-ks-control");
  CHECK(row(lines, "kernel release").row.patched == "6.1.192-ks-patched");
  CHECK(row(lines, "bzImage SHA-256").note == "expected to differ");
  CHECK(row(lines, "config SHA-256 (normalized)").note.empty());
}

TEST_CASE("a different config fragment fails the config row only", "[build][audit]") {
  auto patched = patched_identity();
  patched["config"]["sha256"] = "dddd";
  auto lines = audit_lines(identity("control"), patched, false);
  CHECK(!all_pass(lines));
  CHECK(row(lines, "config SHA-256 (normalized)").row.status == "FAIL");
  CHECK(row(lines, "config SHA-256 (normalized)").row.patched == "dddd");
  int failed = 0;
  for (auto& l : lines) failed += l.row.status == "FAIL";
  CHECK(failed == 1);
}

TEST_CASE("different compiler flags, compiler or Kbuild identity fail", "[build][audit]") {
  auto flags = patched_identity();
  flags["toolchain"]["make_variables"] = {"KCFLAGS=-O3"};
  auto lines = audit_lines(identity("control"), flags, false);
  CHECK(row(lines, "compiler flags (make variables)").row.status == "FAIL");
  CHECK(row(lines, "compiler flags (make variables)").row.control == "none");
  CHECK(row(lines, "compiler flags (make variables)").row.patched == "KCFLAGS=-O3");

  auto compiler = patched_identity();
  compiler["toolchain"]["compiler"] = "gcc 13";
  CHECK(row(audit_lines(identity("control"), compiler, false), "compiler").row.status == "FAIL");

  auto stamp = patched_identity();
  stamp["kbuild"]["timestamp"] = "now";
  CHECK(row(audit_lines(identity("control"), stamp, false), "KBUILD_BUILD_TIMESTAMP").row.status == "FAIL");

  auto source = patched_identity();
  source["source"]["archive_sha256"] = "bbbb";
  CHECK(row(audit_lines(identity("control"), source, false), "source archive SHA-256 / commit").row.status ==
        "FAIL");
}

TEST_CASE("a release that differs beyond LOCALVERSION fails", "[build][audit]") {
  auto patched = patched_identity();
  patched["kernel_release"] = "6.1.193-ks-patched";
  auto lines = audit_lines(identity("control"), patched, false);
  CHECK(row(lines, "kernel release").row.status == "FAIL");
  // Sixty-third attack: a LOCALVERSION that is the whole release strips it to nothing.
  patched["kernel_release"] = patched["kbuild"]["localversion"] = "9.9.9-evil";
  auto control = identity("control");
  control["kbuild"]["localversion"] = "6.1.192-ks-control";
  CHECK(row(audit_lines(control, patched, false), "kernel release").row.status == "FAIL");
}

TEST_CASE("two empty identities match in nothing: every row that must match fails", "[build][audit]") {
  // Sixty-third attack: builds {} and {} passed every row as "-" and "-".
  for (auto& line : audit_lines(json::object(), json::object(), false))
    if (line.row.field != "compiler flags (make variables)" && line.note.empty())
      CHECK(line.row.status == "FAIL");
  CHECK(row(audit_lines(json::object(), json::object(), false), "compiler").row.status == "FAIL");
}

TEST_CASE("an arm at a later commit may change the release, the commit row names it", "[build][audit]") {
  auto later = identity("patched");
  later["source"] = {{"kind", "git"}, {"version", "6.1.192"}, {"archive_sha256", ""}, {"commit", "aaaa1111"}};
  later["commit"] = {{"name", "master"}, {"sha", "bbbb2222"}, {"subject", "Linux 6.2-rc1"}, {"file", "git diff aaaa1111..bbbb2222"}};
  later["kernel_release"] = "6.2.0-rc1-ks-patched";
  later["config"]["sha256"] = "dddd";  // new Kconfig symbols, a new version in its header
  auto control = identity("control");
  control["source"] = later["source"];
  auto lines = audit_lines(control, later, true);
  CHECK(all_pass(lines));
  CHECK(row(lines, "kernel release").note == "expected to differ (the patched arm is a later commit)");
  CHECK(row(lines, "commit").row.control == "aaaa1111");
  CHECK(row(lines, "commit").row.patched == "bbbb2222 Linux 6.2-rc1");
  CHECK(row(lines, "config SHA-256 (normalized)").note == "may differ (the patched arm is a later commit)");
  // An experiment that names no later commit: the patched identity's own word loosens nothing
  // (thirty-eighth attack: a bundle's builds.patched.commit passed another config).
  auto unnamed = audit_lines(control, later, false);
  CHECK(row(unnamed, "kernel release").row.status == "FAIL");
  CHECK(row(unnamed, "config SHA-256 (normalized)").row.status == "FAIL");
  CHECK(row(unnamed, "commit").row.status == "FAIL");
  CHECK(row(unnamed, "commit").note == "the patched kernel is a commit the experiment does not name");
  // Without a commit the same differences still fail (a patch must not change them), and an
  // experiment that names one wants it in the identity.
  later.erase("commit");
  CHECK(row(audit_lines(control, later, false), "kernel release").row.status == "FAIL");
  CHECK(row(audit_lines(control, later, false), "config SHA-256 (normalized)").row.status == "FAIL");
  CHECK(row(audit_lines(control, later, true), "commit").row.status == "FAIL");
  CHECK_FALSE(all_pass(audit_lines(control, later, true)));
}

TEST_CASE("builds_json carries both identities and the audit rows", "[build][audit]") {
  auto builds = builds_json(identity("control"), patched_identity(), false);
  CHECK(builds["matched"] == true);
  CHECK(builds["control"]["arm"] == "control");
  CHECK(builds["patched"]["patches"][0]["subject"] == "[PATCH] btrfs: drop SB_NOSEC");
  REQUIRE(builds["audit"].is_array());
  for (auto& r : builds["audit"]) {
    CHECK(r.contains("field"));
    CHECK((r["status"] == "PASS" || r["status"] == "FAIL"));
    CHECK(r["control"].is_string());
    CHECK(r["patched"].is_string());
  }
  auto rows = audit(identity("control"), patched_identity(), false);
  CHECK(rows.size() == builds["audit"].size());
}

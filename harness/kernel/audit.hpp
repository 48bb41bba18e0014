#pragma once
// The matched-build audit: two build identities (see identity JSON in kbuild.hpp) compared
// field by field, as in the 000_* report. Only the patch identity, the release's
// LOCALVERSION and therefore the bzImage may differ between control and patched; every
// other difference is a FAIL. Pure.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "evidence/bundle.hpp"

namespace ks::kernel {

struct AuditLine {
  evidence::AuditRow row;  // field, status PASS|FAIL, control, patched
  std::string note;        // "expected to differ" for the rows allowed to differ
};

// LATER_COMMIT: the experiment builds the patched arm from a later commit of its git source
// (experiment::patched_at_later_commit), so its config and release may differ too. Taken from
// the experiment, never from the patched identity: an identity that names a commit the
// experiment does not (or none where it does) is a FAIL.
std::vector<AuditLine> audit_lines(const nlohmann::json& control, const nlohmann::json& patched, bool later_commit);

// The rows as the bundle holds them (evidence::AuditRow has no note).
std::vector<evidence::AuditRow> audit(const nlohmann::json& control, const nlohmann::json& patched,
                                      bool later_commit);

// builds.audit[]: [{field, status, control, patched, note?}]
nlohmann::json audit_json(const nlohmann::json& control, const nlohmann::json& patched, bool later_commit);

// The bundle's `builds` object: {control, patched, audit[], matched}.
nlohmann::json builds_json(const nlohmann::json& control, const nlohmann::json& patched, bool later_commit);

bool all_pass(const std::vector<AuditLine>& lines);

// "patches: none" / "btrfs-drop-sb-nosec.patch 1a2b3c4d5e6f [PATCH] btrfs: ..." per patch.
std::string describe_patches(const nlohmann::json& identity);

}  // namespace ks::kernel

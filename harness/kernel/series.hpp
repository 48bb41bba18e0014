#pragma once
// A patch series as a cumulative comparison: experiment k of N compares base + patches
// 1..k-1 (control) with base + patches 1..k (patched), so each sandwich measures what
// patch k adds on top of the ones before it. Pure: values in, values out; the CLI
// (cli/series.cpp) writes the files.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kernel/patches.hpp"

namespace ks::kernel {

// One patch of the series as a file of its own: a one-message mailbox (From:, Date:,
// Subject:, Message-ID: and the body as `git am` would apply it), so the bundle still
// records its subject and Message-ID.
struct SeriesPatchFile {
  int index = 1;
  std::string subject;
  std::string name;  // "0003-btrfs-drop-the-lock.patch"
  std::string text;
};

// The series' patches, each as its own file, in series order. Throws UserError (from the
// mailbox parser) when the text holds no patch, or more than kMaxSeriesPatches.
inline constexpr size_t kMaxSeriesPatches = 200;
std::vector<SeriesPatchFile> split_series(std::string_view mbox_text, const std::string& origin);

// What series.json (the directory `ksandwich series` writes) says: the base experiment,
// the mailbox, and per patch its experiment.
struct SeriesStep {
  int index = 1;
  std::string subject;
  std::string message_id;
  std::string patch_file;   // relative to the series directory: patches/0003-....patch
  std::string experiment;   // relative to the series directory: experiments/<name>.json
  std::string name;         // the experiment's name, also its results/<name>/ directory
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SeriesStep, index, subject, message_id, patch_file, experiment, name)

struct SeriesManifest {
  std::string base_experiment;  // absolute path of the experiment given
  std::string mbox;             // absolute path of the mailbox given
  std::string mbox_sha256;
  std::vector<SeriesStep> steps;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SeriesManifest, base_experiment, mbox, mbox_sha256, steps)

inline constexpr const char* kSeriesManifestName = "series.json";

// "<base>-p03": the name of experiment K of a series of N (zero-padded to N's width).
std::string series_experiment_name(const std::string& base_name, int k, int n);

// Experiment K (1-based) of the series: BASE (the experiment as JSON, its relative paths
// already made absolute) with control = base's control patches + PATCH_PATHS[0..k-2] and
// patched = base's control patches + PATCH_PATHS[0..k-1], named by series_experiment_name.
// The base's patched arm is replaced; its other arm settings (mkfs, mount, sysfs) are kept.
nlohmann::json series_experiment(const nlohmann::json& base, const std::vector<std::string>& patch_paths,
                                 int k);

// Why EXPERIMENT is not what series_experiment makes of step k, given PREVIOUS, step k-1's
// (nullptr for step 1): its control arm's patches are step k-1's patched arm's, and its
// patched arm's are those and one more, whose file name is PATCH_FILE's (empty: not known).
// nullopt when it is. A directory handed over names its steps itself, and its step k can be
// any run at all (sixty-ninth attack: another experiment's run shown as patch -5's cost).
std::optional<std::string> series_step_unlike(const nlohmann::json& experiment, const nlohmann::json* previous,
                                              const std::string& patch_file);

}  // namespace ks::kernel

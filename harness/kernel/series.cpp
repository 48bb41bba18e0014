#include "kernel/series.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string_view>

#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::kernel {
namespace {

// "[PATCH v2 3/7] btrfs: drop the lock" -> "btrfs-drop-the-lock" (what format-patch names).
std::string slug(const std::string& subject) {
  std::string_view s = subject;
  while (!s.empty() && (s.front() == ' ' || s.front() == '[')) {
    if (s.front() == '[') {
      auto close = s.find(']');
      if (close == std::string_view::npos) break;
      s.remove_prefix(close + 1);
    } else {
      s.remove_prefix(1);
    }
  }
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
    if (out.size() >= 52) break;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "patch" : out;
}

// TEXT as the body of an mboxrd message: a line starting with "From " after any '>' gets one
// '>' more, which the parser takes off again. Unescaped, a decoded body's "From " line followed
// by header lines would start a message of its own when the file is read back: one the mail
// did not show, with its own encoding (a diff hidden in base64).
std::string mboxrd_body(std::string_view text) {
  std::string out;
  for (size_t start = 0; start < text.size();) {
    auto end = std::min(text.find('\n', start), text.size() - 1) + 1;
    auto line = text.substr(start, end - start);
    auto quotes = line.find_first_not_of('>');
    if (quotes != std::string_view::npos && line.substr(quotes).starts_with("From ")) out += '>';
    out += line;
    start = end;
  }
  return out;
}

std::string pad(int k, int n) {
  auto width = std::to_string(n).size();
  auto s = std::to_string(k);
  return std::string(width > s.size() ? width - s.size() : 0, '0') + s;
}

// Step k measures patch k on top of patches 1..k-1: numbered patches must be the whole series,
// 1/N to N/N (fifty-seventh attack: without 1/3, each step measured a stack the series never
// had). parse_patch_file has made them one run k/N..m/N, in order.
void require_whole_series(const PatchSet& set, const std::string& origin) {
  const auto& patches = set.patches;
  const int total = patches.front().total;
  if (total == 0 || static_cast<int>(patches.size()) == total) return;
  std::vector<std::string> missing;
  for (int k = 1; k <= total && missing.size() < 10; ++k)
    if (k < patches.front().position || k > patches.back().position)
      missing.push_back(std::to_string(k) + "/" + std::to_string(total));
  throw UserError(origin + " is not a whole series: it lacks patch " + join(missing, ", "),
                  "save every patch of the series (b4 am, or lore's t.mbox.gz with --message-id)");
}

}  // namespace

std::vector<SeriesPatchFile> split_series(std::string_view mbox_text, const std::string& origin) {
  auto set = parse_patch_file(mbox_text, origin);
  // Experiment k lists patches 1..k, so the files grow with the square of the count; a series
  // on a mailing list is tens of patches, a thousand is a mailbox of something else.
  if (set.patches.size() > kMaxSeriesPatches)
    throw UserError(origin + " holds " + std::to_string(set.patches.size()) + " patches; a series is at most " +
                        std::to_string(kMaxSeriesPatches),
                    "save the one series to measure (b4 am, or git format-patch of its commits)");
  require_whole_series(set, origin);
  std::vector<SeriesPatchFile> out;
  for (auto& p : set.patches) {
    SeriesPatchFile f;
    f.index = p.index;
    f.subject = p.subject;
    auto number = std::to_string(p.index);
    f.name = std::string(4 - std::min<size_t>(4, number.size()), '0') + number + "-" + slug(p.subject) + ".patch";
    // Header values are single lines here (the parser unfolded them).
    f.text = "From ksandwich-series Mon Sep 17 00:00:00 2001\n";
    if (!p.author.empty()) f.text += "From: " + p.author + "\n";
    if (!p.date.empty()) f.text += "Date: " + p.date + "\n";
    f.text += "Subject: " + p.subject + "\n";
    if (!p.message_id.empty()) f.text += "Message-ID: " + p.message_id + "\n";
    f.text += "\n" + mboxrd_body(p.text);
    out.push_back(std::move(f));
  }
  return out;
}

std::string series_experiment_name(const std::string& base_name, int k, int n) {
  return base_name + "-p" + pad(k, std::max(n, 10));
}

nlohmann::json series_experiment(const nlohmann::json& base, const std::vector<std::string>& patch_paths,
                                 int k) {
  int n = static_cast<int>(patch_paths.size());
  if (k < 1 || k > n) throw UserError("series: patch " + std::to_string(k) + " of " + std::to_string(n) + " does not exist");
  nlohmann::json e = base;
  std::vector<std::string> below;
  if (base.contains("arms") && base["arms"].contains("control") && base["arms"]["control"].contains("patches"))
    below = base["arms"]["control"]["patches"].get<std::vector<std::string>>();
  below.insert(below.end(), patch_paths.begin(), patch_paths.begin() + (k - 1));
  auto above = below;
  above.push_back(patch_paths[static_cast<size_t>(k - 1)]);
  auto control = base.value("arms", nlohmann::json::object()).value("control", nlohmann::json::object());
  e["arms"]["control"] = control;
  e["arms"]["control"]["patches"] = below;
  e["arms"]["patched"] = control;
  e["arms"]["patched"]["patches"] = above;
  e["name"] = series_experiment_name(base.value("name", std::string("series")), k, n);
  e["description"] = "patch " + std::to_string(k) + " of " + std::to_string(n) +
                     " of a series: base + patches 1.." + std::to_string(k - 1) + " against base + patches 1.." +
                     std::to_string(k) + " (what patch " + std::to_string(k) + " adds)";
  return e;
}

std::optional<std::string> series_step_unlike(const nlohmann::json& experiment, const nlohmann::json* previous,
                                              const std::string& patch_file) {
  // An arm's patches as the experiment lists them; none listed is none, anything else nullopt.
  auto patches = [](const nlohmann::json& e, const char* arm) -> std::optional<std::vector<std::string>> {
    const auto* arms = e.is_object() && e.contains("arms") ? &e["arms"] : nullptr;
    const auto* a = arms && arms->is_object() && arms->contains(arm) ? &(*arms)[arm] : nullptr;
    if (!a || !a->is_object() || !a->contains("patches")) return std::vector<std::string>{};
    std::vector<std::string> out;
    if (!(*a)["patches"].is_array()) return std::nullopt;
    for (auto& p : (*a)["patches"]) {
      if (!p.is_string()) return std::nullopt;
      out.push_back(p.get<std::string>());
    }
    return out;
  };
  auto control = patches(experiment, "control");
  auto patched = patches(experiment, "patched");
  if (!control || !patched) return "its arms' patches are not lists of files";
  if (patched->size() != control->size() + 1 || !std::equal(control->begin(), control->end(), patched->begin()))
    return "its patched arm is not its control arm and one patch more";
  if (previous && patches(*previous, "patched") != control)
    return "its control arm is not the step before's patched arm";
  auto added = std::filesystem::path(patched->back()).filename().string();
  auto file = std::filesystem::path(patch_file).filename().string();
  if (!patch_file.empty() && added != file)
    return "the patch it adds is " + one_line_cut(added, 80) + ", not the step's " + one_line_cut(file, 80);
  return std::nullopt;
}

}  // namespace ks::kernel

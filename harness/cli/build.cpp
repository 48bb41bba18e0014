// `ksandwich build`: build one arm's kernel (or every arm of an experiment) into the build
// cache and print its identity. A second call with nothing changed builds nothing.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "kernel/audit.hpp"
#include "kernel/kbuild.hpp"
#include "kernel/progress.hpp"
#include "experiment/experiment.hpp"
#include "source/source.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct BuildArgs {
  std::string experiment;
  std::string source;
  std::string commit;
  std::string config_base;
  std::vector<std::string> fragments;
  std::string arm = "control";
  std::vector<std::string> patches;
  std::string cache;
  std::vector<std::string> make_variables;
  int jobs = 0;
  int make_timeout_min = 60;
  bool no_ccache = false;
  bool preflight = false;
  bool json = false;
};

std::string short_sha(const json& j, const char* key) {
  auto s = j.value(key, std::string{});
  return s.empty() ? "-" : "sha256:" + s.substr(0, 16);
}

void print_identity(const json& id, const ks::kernel::BuiltKernel* built) {
  auto& src = id["source"];
  auto& cfg = id["config"];
  auto& tc = id["toolchain"];
  auto& kb = id["kbuild"];
  std::vector<std::string> fragments;
  for (auto& f : cfg["fragments"]) fragments.push_back(f.value("name", ""));
  auto row = [](const std::string& k, const std::string& v) { fmt::print("  {:<15} {}\n", k, v); };
  fmt::print("{}\n", id.value("arm", ""));
  row("kernel release", id.value("kernel_release", ""));
  if (id.contains("bzimage") && !id["bzimage"].value("path", std::string{}).empty())
    row("bzImage", id["bzimage"].value("path", "") + "  " + short_sha(id["bzimage"], "sha256"));
  row("source", src.value("version", "") + " (" + src.value("kind", "") + " " +
                    src.value("origin", "") + ") " +
                    (src.value("archive_sha256", std::string{}).empty()
                         ? "commit " + src.value("commit", "")
                         : short_sha(src, "archive_sha256")));
  row("config", short_sha(cfg, "sha256") + " (" + cfg.value("base", "") +
                    (fragments.empty() ? "" : " + " + ks::join(fragments, " + ")) + "; " +
                    std::to_string(cfg.value("symbols_checked", 0)) + " requested symbols as asked)");
  row("compiler", tc.value("compiler", ""));
  row("linker", tc.value("linker", ""));
  if (!tc["make_variables"].empty())
    row("make variables", ks::join(tc["make_variables"].get<std::vector<std::string>>(), " "));
  row("kbuild", "\"" + kb.value("timestamp", "") + "\" " + kb.value("user", "") + "@" +
                    kb.value("host", "") + " #" + kb.value("version", "") + ", LOCALVERSION " +
                    kb.value("localversion", ""));
  if (id["patches"].empty()) row("patches", "none");
  for (auto& p : id["patches"]) {
    row("patch", p.value("file", "") + (p.value("count", 1) > 1
                                           ? " #" + std::to_string(p.value("index", 1)) : "") +
                     "  " + short_sha(p, "sha256"));
    row("", p.value("subject", ""));
    if (!p.value("message_id", std::string{}).empty())
      row("", "Message-ID: " + p.value("message_id", ""));
  }
  auto& b = id["build"];
  if (b.value("mode", "") == "preflight") {
    row("build", "preflight only (nothing compiled); would be " + b.value("dir", ""));
    return;
  }
  std::string how = b.value("mode", "") + " build " +
                    ks::kernel::Progress::format_duration(b.value("seconds", 0.0)) + ", " +
                    std::to_string(b.value("compiled", 0)) + " files compiled";
  if (!b.value("reused_from", std::string{}).empty())
    how += ", objects reused from " + fs::path(b.value("reused_from", "")).filename().string();
  row("build", how);
  if (built)
    row("this call", built->cache_hit
                         ? "cache hit, " + ks::kernel::Progress::format_duration(built->seconds)
                         : "built, " + ks::kernel::Progress::format_duration(built->seconds));
}

void print_audit(const json& control, const json& patched, bool later_commit) {
  auto lines = ks::kernel::audit_lines(control, patched, later_commit);
  fmt::print("\nmatched-build audit\n");
  fmt::print("  {:<34} {:<6} {:<40} {}\n", "field", "status", "control", "patched");
  auto cut = [](std::string s) { return s.size() > 40 ? s.substr(0, 37) + "..." : s; };
  for (auto& l : lines)
    fmt::print("  {:<34} {:<6} {:<40} {}{}\n", l.row.field, l.row.status, cut(l.row.control),
               cut(l.row.patched), l.note.empty() ? "" : "  (" + l.note + ")");
}

}  // namespace

void set_build_command(CLI::App& app, const ks::cli::Context& context) {
  auto* cmd = app.add_subcommand(
      "build",
      "build one arm's kernel (or every arm of an experiment) into the build cache and print "
      "its identity; asking again with nothing changed builds nothing");
  ks::cli::set_exit_status(cmd, {{0, "built, or found in the cache"}});
  auto args = std::make_shared<BuildArgs>();
  cmd->add_option("experiment", args->experiment,
                  "experiment file: source, config and each arm's patches come from it");
  cmd->add_option("--source", args->source,
                  "kernel source: a tarball, or a git tree with --commit (default: "
                  "/usr/src/linux-source-6.1.tar.xz)");
  cmd->add_option("--commit", args->commit, "commit, tag or branch of a git --source");
  cmd->add_option("--config-base", args->config_base,
                  "tinyconfig (default), defconfig, allnoconfig or the path of a .config");
  cmd->add_option("--config-fragment", args->fragments,
                  "config fragment, a name in configs/kernel/ or a path (repeatable; default "
                  "btrfs-bench.config)");
  cmd->add_option("--arm", args->arm,
                  "arm to build: control (default), patched, another arm of the experiment, "
                  "or all");
  cmd->add_option("--patch", args->patches,
                  "patch for this arm: a diff or a saved mailbox / series (repeatable, applied "
                  "in order)");
  cmd->add_option("--cache", args->cache,
                  "cache directory (default: $KSANDWICH_CACHE or /var/cache/ksandwich)");
  cmd->add_option("--make-var", args->make_variables,
                  "extra make variable for every arm, e.g. KCFLAGS=-O3 (repeatable; recorded "
                  "and audited)");
  cmd->add_option("--jobs,-j", args->jobs, "make -j (default: online CPUs)");
  cmd->add_option("--make-timeout", args->make_timeout_min,
                  "minutes one make may take before it is stopped (default 60)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--no-ccache", args->no_ccache, "do not use ccache");
  cmd->add_flag("--preflight", args->preflight,
                "check source, config and patches without compiling");
  ks::cli::add_text_or_json(cmd, args->json, "the built kernel's identity");

  cmd->callback([args, &context] {
    ks::kernel::BuildRequest base;
    base.repo_dir = context.repo_dir;
    base.config.fragments = {"btrfs-bench.config"};
    std::map<std::string, std::vector<std::string>> arm_patches;
    std::map<std::string, std::string> arm_commit;  // an arm at a later commit of a git source
    std::vector<std::string> arm_order;
    if (!args->experiment.empty()) {
      const auto file = fs::absolute(args->experiment);  // a bare name's directory is the current one
      if (!fs::is_regular_file(ks::status_as_invoking_user(file)))
        throw ks::UserError("experiment file not found: " + args->experiment,
                            "pass the path of an experiment, e.g. configs/experiments/default.json");
      auto e = ks::experiment::parse_file(file);
      // Its source and config paths resolved beside it (as `run` does), never in the current directory.
      auto resolved = ks::kernel::request_for_arm(e, "control", base.repo_dir, file.parent_path());
      base.source = resolved.source;
      base.config = resolved.config;
      for (auto& [name, arm] : e.arms) {
        auto r = ks::kernel::request_for_arm(e, name, base.repo_dir, file.parent_path());
        arm_patches[name] = r.patches;
        arm_commit[name] = r.commit;
        if (name != "control") arm_order.push_back(name);
      }
      if (e.arms.count("control")) arm_order.insert(arm_order.begin(), "control");
    }
    if (!args->source.empty()) {
      fs::path src = args->source;
      base.source = {};
      if (fs::is_directory(ks::status_as_invoking_user(src))) {
        base.source.kind = "git";
        base.source.commit = args->commit.empty() ? "HEAD" : args->commit;
      } else {
        base.source.kind = src == ks::source::kDebianTarball ? "debian" : "tarball";
      }
      base.source.path = fs::absolute(src).string();
    }
    if (!args->config_base.empty()) base.config.base = args->config_base;
    if (!args->fragments.empty()) base.config.fragments = args->fragments;
    if (!args->cache.empty()) base.cache_root = args->cache;
    base.make_variables = args->make_variables;
    base.jobs = args->jobs;
    base.make_timeout = std::chrono::minutes(args->make_timeout_min);
    base.use_ccache = !args->no_ccache;

    std::vector<std::string> arms = {args->arm};
    if (args->arm == "all") {
      arms = arm_order.empty() ? std::vector<std::string>{"control"} : arm_order;
      if (!args->patches.empty())
        throw ks::UserError("--patch names one arm's patches; it cannot go with --arm all");
    }
    if (!args->experiment.empty() && args->arm != "all" && !arm_patches.count(args->arm) &&
        std::find(arm_order.begin(), arm_order.end(), args->arm) == arm_order.end())
      throw ks::UserError("the experiment has no arm `" + args->arm + "`",
                          "arms: " + ks::join(arm_order, ", ") + " (or --arm all)");

    ks::kernel::Progress progress(stderr);
    std::map<std::string, json> identities;
    std::vector<ks::kernel::BuiltKernel> built;
    for (auto& arm : arms) {
      auto request = base;
      request.arm = arm;
      request.patches = args->patches.empty() ? arm_patches[arm] : args->patches;
      request.commit = arm_commit[arm];
      if (args->preflight) {
        identities[arm] = ks::kernel::preflight(request, progress);
      } else {
        built.push_back(ks::kernel::build_arm(request, progress));
        identities[arm] = built.back().identity;
      }
    }

    if (args->json) {
      if (arms.size() == 1) {
        fmt::print("{}\n", identities[arms[0]].dump(2));
      } else {
        json out = json::object();
        for (auto& [arm, id] : identities) out[arm] = id;
        if (identities.count("control") && identities.count("patched"))
          out = ks::kernel::builds_json(identities["control"], identities["patched"], !arm_commit["patched"].empty());
        fmt::print("{}\n", out.dump(2));
      }
      return;
    }
    for (size_t i = 0; i < arms.size(); ++i) {
      if (i) fmt::print("\n");
      print_identity(identities[arms[i]], built.empty() ? nullptr : &built[i]);
    }
    if (identities.count("control") && identities.count("patched"))
      print_audit(identities["control"], identities["patched"], !arm_commit["patched"].empty());
  });
}

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "pipeline/host_changes.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::cli {

void set_cleanup_command(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand(
      "cleanup", "undo what a killed run left on this machine (mounts, loop/zram/brd devices, files in "
                 "/dev/shm, knobs, governor, tracefs), from its journal DIR/logs/journal.jsonl");
  set_exit_status(cmd, {{0, "nothing left to undo: everything the run had set up is undone"}});
  auto dir = std::make_shared<std::string>();
  cmd->add_option("dir", *dir, "the run's output directory (default: every registered run whose process is gone)")
      ->check(non_empty_path());
  cmd->callback([dir, &context] {
    namespace fs = std::filesystem;
    std::vector<fs::path> dirs;
    if (!dir->empty()) {
      // A run directory as an output's place: under sudo one the user could write in (theirs, or
      // made for them), never root's, whose entries and journal are not theirs to learn of or
      // act on (sixtieth attack: a root-only directory's entries were named in the answer).
      check_output_dir(*dir, "cleanup's DIR");
      dirs.push_back(fs::absolute(*dir).lexically_normal());
    } else {
      dirs = pipeline::dead_runs();
      if (dirs.empty()) fmt::print("nothing to clean up: no run that was killed is registered in {}\n",
                                   pipeline::kStateDir.string());
    }
    bool failed = false;
    int refused = 0;
    for (auto& d : dirs) {
      pipeline::CleanupReport report;
      try {
        report = pipeline::cleanup_run(d);
      } catch (const UserError& e) {
        if (!dir->empty()) throw;
        // One registered run's directory that is not the run's own any more holds up no other
        // (seventy-first attack: another user made a removed run's directory, and every later
        // `cleanup` stopped there).
        fmt::print("{}: not cleaned up: {}\n", one_line(d.string()), one_line(e.what()));
        ++refused;
        continue;
      }
      for (auto& line : report.lines) fmt::print("{}\n", line);
      fmt::print("{}: {} undone, {} skipped{}\n", one_line(d.string()), report.undone, report.skipped,
                 report.lines.empty() ? " (nothing left to undo)" : "");
      failed = failed || !report.ok();
    }
    if (refused > 0)
      throw UserError(std::to_string(refused) + " registered run(s) could not be cleaned up (the \"not cleaned up\" " +
                          "lines above say why); every other one was looked at",
                      "see to that directory (a run's own is root's and no one else's), then run `ksandwich cleanup` again");
    if (failed)
      throw UserError("some change could not be undone (the FAILED line above says which and why)",
                      "fix that (e.g. stop the process that still uses a mount), then run the same "
                      "`ksandwich cleanup` again: it carries on where it stopped");
    context.exit_code = 0;
  });
}

}  // namespace ks::cli

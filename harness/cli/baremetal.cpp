// `ksandwich baremetal install | uninstall | resume | status`: the boot hook of the
// bare-metal backend. A run on the lab machine leaves for each point's kernel and comes
// back by kexec or a reboot; at boot the installed systemd unit runs `baremetal resume`,
// which goes on with the run registered in the state directory.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "boot/baremetal/baremetal.hpp"
#include "cli/commands.hpp"
#include "proc/runner.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/ownership.hpp"

namespace ks::cli {
namespace {

namespace fs = std::filesystem;
namespace bm = ks::boot::baremetal;

const fs::path kSystemUnitDir = "/etc/systemd/system";

fs::path unit_file(const fs::path& dir) { return dir / bm::kUnitName; }
fs::path wants_link(const fs::path& dir) { return dir / "multi-user.target.wants" / bm::kUnitName; }

// systemd rereads its units when it is the init and the unit is in its directory.
void reload_systemd(const fs::path& dir) {
  if (dir == kSystemUnitDir && fs::is_directory("/run/systemd/system") && proc::have_program("systemctl"))
    proc::run(proc::command({"systemctl", "daemon-reload"}, std::chrono::seconds(60)));
}

// DIR, where root writes a unit that runs as root at boot, and its multi-user.target.wants:
// no one else's, and no link of anyone else's on the way (a planted wants/ would enable the
// unit elsewhere, or remove another file of that name).
void require_unit_dir(const fs::path& dir) {
  for (const auto& place : {dir, wants_link(dir).parent_path()})
    if (auto why = untrusted_on_the_way(place, PathRole::kTrustedDirectory))
      throw UserError("--unit-dir " + dir.string() + ": " + *why + ", and its unit runs as root at boot",
                      "name a directory only root can change (the default is " + kSystemUnitDir.string() + ")");
}

// Whether the unit file is ours: a regular file (never a link, FIFO or device) that says so.
bool ours(const fs::path& unit) {
  try {
    auto text = read_regular_file(unit, 64 << 10, Links::refuse).value_or("");
    return text.starts_with("# Written by `ksandwich baremetal install`");
  } catch (const SystemError&) {
    return false;
  }
}

void install(const fs::path& dir, const fs::path& ksandwich) {
  require_unit_dir(dir);
  if (auto why = untrusted_on_the_way(ksandwich, PathRole::kTrustedFile))
    throw UserError("the unit would run " + ksandwich.string() + " as root at boot, and " + *why,
                    "install the unit from a ksandwich only root can change (the .deb's /usr/bin/ksandwich)");
  auto unit = unit_file(dir);
  if (fs::exists(fs::symlink_status(unit)) && !ours(unit))
    throw UserError(unit.string() + " exists and was not written by ksandwich", "move it away first");
  auto state = fs::absolute(bm::state_dir());
  // What the unit holds is paths and numbers only, written as they are: no space (systemd
  // splits ExecStart= there), quote, $ or % (it expands them), nor any control character
  // (it ends a line at a lone CR too: sixty-eighth attack, a CR in $KSANDWICH_CACHE added an
  // ExecStartPre= line; seventieth, a ksandwich under "ks build/" had root run "ks" at boot).
  auto plain = [](const std::string& what, const std::string& value) {
    const bool control = std::any_of(value.begin(), value.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; });
    if (control || value.find_first_of(" \"'\\$%") != std::string::npos)
      throw UserError(what + " holds a space, a quote, a $, a control character or a % (systemd splits or expands it)",
                      "use a plain path");
  };
  const auto program = fs::absolute(ksandwich);  // the unit's ExecStart=
  plain("the path of ksandwich, " + one_line_cut(program.string()) + ",", program.string());
  plain("$KSANDWICH_BAREMETAL_STATE", state.string());
  // The sudo user the unit names is one ksandwich takes (seventy-first attack: SUDO_UID=abc
  // went into the unit, and the resumed run refused it at boot).
  invoking_user();
  std::vector<std::pair<std::string, std::string>> env;
  for (const char* name : {"KSANDWICH_CACHE", "CCACHE_DIR", "SUDO_UID", "SUDO_GID"})
    if (const char* v = std::getenv(name); v && *v) {
      // Paths absolute: systemd starts the unit in /, not where this ran.
      const std::string value = std::string_view(name).starts_with("SUDO_") ? v : fs::absolute(v).string();
      plain(std::string("$") + name, value);
      env.emplace_back(name, value);
    }
  fs::create_directories(state);
  fs::create_directories(wants_link(dir).parent_path());
  write_file_atomic(unit, bm::resume_unit(program, state, env));
  std::error_code ec;
  fs::remove(wants_link(dir), ec);
  fs::create_symlink(unit, wants_link(dir));  // what `systemctl enable` makes
  reload_systemd(dir);
  std::printf("installed %s (enabled: %s)\nat boot it goes on with the run registered in %s\n", unit.c_str(),
              wants_link(dir).c_str(), (state / "pending").c_str());
}

void uninstall(const fs::path& dir) {
  require_unit_dir(dir);
  auto unit = unit_file(dir);
  if (fs::exists(fs::symlink_status(unit)) && !ours(unit))
    throw UserError(unit.string() + " was not written by ksandwich; left alone", "remove it yourself if it is yours");
  std::error_code ec;
  bool removed = fs::remove(wants_link(dir), ec);
  removed = fs::remove(unit, ec) || removed;
  reload_systemd(dir);
  std::printf(removed ? "removed %s\n" : "%s was not installed\n", unit.c_str());
}

// Goes on with the registered run; what it prints goes to the console and the journal.
int resume(Context& context) {
  auto pending = bm::state_dir() / "pending";
  auto dir = bm::pending_run();
  if (dir.empty()) {
    std::printf("ksandwich baremetal resume: no run is waiting (%s)\n", pending.c_str());
    return 0;
  }
  pipeline::RunOptions o;
  o.resume = true;
  o.after_switch = true;
  o.out_dir = dir;
  set_tool(o, context);
  std::printf("ksandwich baremetal resume: going on with %s\n", one_line(dir).c_str());
  std::fflush(stdout);
  // Returns when the run is over or cannot go on: then nothing waits any more, so the next
  // boot does not retry it (a run that switched again has registered itself anew).
  auto done = [&] {
    if (bm::pending_run() == dir) fs::remove(pending);
  };
  try {
    int code = pipeline::run(o);
    done();
    return code;
  } catch (...) {
    done();
    throw;
  }
}

}  // namespace

void set_baremetal_command(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand("baremetal", "the bare-metal backend's boot hook: install, uninstall, resume, status");
  cmd->require_subcommand(1);
  set_exit_status(cmd, {{0, "done"}});
  auto unit_dir = std::make_shared<std::string>(kSystemUnitDir.string());
  auto* in = cmd->add_subcommand("install", "install and enable the systemd unit that goes on with a bare-metal run "
                                            "at boot (state: $KSANDWICH_BAREMETAL_STATE or /var/lib/ksandwich/baremetal)");
  in->add_option("--unit-dir", *unit_dir, "where systemd units live")->capture_default_str();
  in->callback([unit_dir, &context] { install(fs::absolute(*unit_dir), context.ksandwich); });
  auto* un = cmd->add_subcommand("uninstall", "disable and remove that unit");
  un->add_option("--unit-dir", *unit_dir, "where systemd units live")->capture_default_str();
  un->callback([unit_dir] { uninstall(fs::absolute(*unit_dir)); });
  auto* re = cmd->add_subcommand("resume", "go on with the registered run (`ksandwich run --resume DIR "
                                           "--after-switch`); what the unit runs at boot");
  set_exit_status(re, verdict_exits());  // the run's
  re->callback([&context] { context.exit_code = resume(context); });
  auto* st = cmd->add_subcommand("status", "the run waiting for the boot hook, and whether the unit is installed");
  st->add_option("--unit-dir", *unit_dir, "where systemd units live")->capture_default_str();
  st->callback([unit_dir] {
    // Under sudo, as the user can see them (seventy-first attack: a root-only state directory's
    // registration was printed, and a unit in a root-only directory said installed).
    AsInvokingUser as;
    auto pending = one_line(bm::pending_run());
    auto unit = unit_file(fs::absolute(*unit_dir));
    std::error_code ec;
    const bool installed = fs::exists(unit, ec);
    std::printf("waiting run: %s\nboot hook: %s\n", pending.empty() ? "none" : pending.c_str(),
                installed ? ("installed, " + one_line(unit.string())).c_str() : "not installed");
  });
}

}  // namespace ks::cli

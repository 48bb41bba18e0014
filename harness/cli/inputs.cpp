// Checks of what the command line names, made before any subcommand touches anything, so
// that a bad path is a clear message and exit 2 instead of an exception from deep inside.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "cli/commands.hpp"
#include "experiment/strict_json.hpp"
#include "pipeline/bundle_file.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::cli {

namespace fs = std::filesystem;

const CLI::Validator& non_empty_path() {
  static const CLI::Validator v(
      [](const std::string& value) -> std::string {
        return value.empty() ? "is empty: give a path, or leave the option out for its default" : "";
      },
      "PATH");
  return v;
}

const CLI::Validator& material_pct() {
  static const CLI::Validator v(
      [](const std::string& text) -> std::string {
        double value = std::strtod(text.c_str(), nullptr);
        return std::isfinite(value) && value > 0 && value < 100 ? ""
                                                                : "must be a percentage above 0 and below 100, e.g. 1";
      },
      "PCT");
  return v;
}

void check_output_dir(const fs::path& dir, const std::string& option) {
  const std::string hint = "name a new directory (or an empty one) on a normal filesystem, e.g. " +
                           option + " results/my-run";
  if (dir.empty()) throw UserError(option + " is empty", hint);
  std::error_code ec;
  auto link = fs::symlink_status(dir, ec);
  if (link.type() == fs::file_type::symlink && !fs::exists(dir, ec))
    throw UserError(option + " " + dir.string() + " is a symbolic link to nothing", hint);
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw UserError(option + " " + dir.string() + " exists and is not a directory", hint);
  // /proc, /sys and /dev hold kernel objects, not results.
  auto real = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  if (ec) throw UserError(option + " " + dir.string() + " cannot be resolved: " + ec.message(), hint);
  for (const char* pseudo : {"/proc", "/sys", "/dev"}) {
    auto p = real.string();
    if (p == pseudo || starts_with(p, std::string(pseudo) + "/"))
      throw UserError(option + " " + dir.string() + " is under " + pseudo +
                          ", which holds kernel objects, not files",
                      hint);
  }
  // The nearest part that exists must be a directory, or the run could not create it.
  for (auto p = real; !p.empty(); p = p.parent_path()) {
    if (fs::exists(p, ec)) {
      if (!fs::is_directory(p, ec))
        throw UserError(option + " " + dir.string() + ": " + p.string() + " is not a directory", hint);
      break;
    }
    if (p == p.parent_path()) break;
  }
}

void check_json_file(const fs::path& path, const std::string& what) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return;  // the subcommand says it does not exist, in its words
  if (fs::is_directory(path, ec))
    throw UserError(what + " " + path.string() + " is a directory", "name the JSON file itself");
  // Bounded, and never a FIFO or device: /dev/zero would be read forever, a FIFO block.
  std::optional<std::string> text;
  try {
    text = read_regular_file(path, size_t(32) << 20, Links::follow);
  } catch (const SystemError& err) {
    throw UserError(what + " " + path.string() + " cannot be read: " + err.what(),
                    "name the JSON file a run wrote or you wrote");
  }
  if (!text) return;
  if (pipeline::is_gzip(*text)) return;  // pipeline::load_bundle checks it decompressed
  experiment::check_json_text(*text, path.string());
}

}  // namespace ks::cli

#include "boot/initramfs.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include "proc/runner.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"

namespace ks::boot {
namespace {

using namespace std::chrono_literals;

using proc::command;

// Where the host path HOST_PATH lands inside the staging directory: the same path.
fs::path staged(const fs::path& stage, const fs::path& host_path) {
  return stage / host_path.relative_path();
}

void copy_into(const fs::path& from, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::remove(to);  // may be a busybox applet symlink: replace it, never write through it
  fs::copy_file(from, to);  // follows a symlinked source: the archive holds the content
}

// Shared objects PROGRAM loads; none for a static program.
std::vector<fs::path> libraries_of(const fs::path& program) {
  auto r = proc::run(command({"ldd", program.string()}, 30s));
  if (r.ok()) return parse_ldd(r.out);
  if ((r.out + r.err).find("not a dynamic executable") != std::string::npos) return {};
  throw SystemError("listing the libraries of " + program.string(), r.describe());
}

// A program and, for a dynamic one, every library the loader lists, each at its host path.
void copy_program(const fs::path& stage, const fs::path& program, const fs::path& guest_path) {
  if (!fs::is_regular_file(program))
    throw UserError("initramfs: " + program.string() + " does not exist",
                    "install it (busybox-static, btrfs-progs, fio) or build ksandwich-agent");
  copy_into(program, staged(stage, guest_path));
  for (auto& library : libraries_of(program)) copy_into(library, staged(stage, library));
}

// Debug information (a RelWithDebInfo build's line tables, a Debug build's all of it) is of
// no use in the guest: without it the archive is smaller and the guest unpacks it sooner
// under TCG. The code is the same bytes.
void strip_debug_info(const fs::path& file) {
  if (!proc::have_program("objcopy")) return;
  proc::run_checked(command({"objcopy", "--strip-debug", file.string()}, 60s));
}

// busybox plus one symlink per applet at the path busybox gives it (bin/sh, sbin/reboot...).
void copy_busybox(const fs::path& stage, const fs::path& busybox) {
  copy_program(stage, busybox, "/bin/busybox");
  auto list = proc::run_checked(command({busybox.string(), "--list-full"}, 30s));
  for (auto& line : split(list.out, '\n')) {
    auto applet = trim(line);
    if (applet.empty() || applet == "bin/busybox") continue;
    auto link = stage / applet;
    fs::create_directories(link.parent_path());
    if (!fs::exists(fs::symlink_status(link))) fs::create_symlink("/bin/busybox", link);
  }
}

// Every mtime 0, so the archive's bytes depend only on the contents.
void clear_mtimes(const fs::path& stage) {
  const timespec zero[2] = {{0, 0}, {0, 0}};
  std::vector<fs::path> paths{stage};
  for (auto& entry : fs::recursive_directory_iterator(stage)) paths.push_back(entry.path());
  for (auto& p : paths)
    if (utimensat(AT_FDCWD, p.c_str(), zero, AT_SYMLINK_NOFOLLOW) != 0)
      throw SystemError("utimensat " + p.string(), errno);
}

std::vector<std::string> archive_listing(const fs::path& stage) {
  std::vector<std::string> files;
  for (auto& entry : fs::recursive_directory_iterator(stage))
    files.push_back(fs::relative(entry.path(), stage).string());
  std::sort(files.begin(), files.end());
  return files;
}

// Removes the staging directory however the build ends.
struct StagingDir {
  fs::path path;
  explicit StagingDir(fs::path p) : path(std::move(p)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~StagingDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

std::vector<fs::path> parse_ldd(const std::string& ldd_output) {
  std::set<fs::path> libraries;
  for (auto& raw : split(ldd_output, '\n')) {
    auto line = trim(raw);
    // "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)", "/lib64/ld-linux-x86-64.so.2 (0x...)",
    // "linux-vdso.so.1 (0x...)" (no file), "libfoo.so.1 => not found".
    auto arrow = line.find("=>");
    std::string target = trim(arrow == std::string::npos ? line : line.substr(arrow + 2));
    if (starts_with(target, "not found"))
      throw UserError("initramfs: the dynamic loader cannot find " + trim(line.substr(0, arrow)),
                      "install the package that provides it, then retry");
    if (!starts_with(target, "/")) continue;
    libraries.insert(target.substr(0, target.find(" (")));
  }
  return {libraries.begin(), libraries.end()};
}

Initramfs build_initramfs(const InitramfsSpec& spec, const fs::path& out) {
  fs::create_directories(out.parent_path());
  StagingDir stage(out.parent_path() / (out.filename().string() + ".stage"));
  const fs::path& root = stage.path;

  for (const char* dir : {"dev", "proc", "sys", "tmp", "mnt", "ksandwich"})
    fs::create_directories(root / dir);
  copy_busybox(root, spec.busybox);
  copy_program(root, spec.agent, "/usr/bin/ksandwich-agent");
  strip_debug_info(root / "usr/bin/ksandwich-agent");
  for (auto& program : spec.programs) copy_program(root, program, program);
  if (!spec.fio_jobs_dir.empty() && fs::is_directory(spec.fio_jobs_dir)) {
    for (auto& entry : fs::directory_iterator(spec.fio_jobs_dir))
      if (entry.path().extension() == ".fio")
        copy_into(entry.path(), root / "ksandwich/fio" / entry.path().filename());
  }
  for (auto& [from, to] : spec.files) {
    if (!fs::is_regular_file(from))
      throw UserError("initramfs: " + from.string() + " does not exist", "name a file that exists");
    copy_into(from, staged(root, to));
  }
  write_file(root / "init", spec.init_script);
  fs::permissions(root / "init", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                     fs::perms::others_read | fs::perms::others_exec);
  write_file(root / "ksandwich/plan.sh", spec.plan);
  clear_mtimes(root);

  Initramfs result;
  result.path = out;
  result.files = archive_listing(root);
  // Sorted names, owner root, no device or inode numbers; not compressed: an emulated guest
  // spent a fifth of a second of guest time (about 1 s of a TCG point) inflating 8 MiB of
  // gzip, and reads the plain archive at memory speed. The pipeline runs inside the staging
  // tree, so the archive's path must not be relative.
  auto partial = fs::absolute(out).string() + ".partial";
  auto pack = command({"bash", "-o", "pipefail", "-c",
                       "find . -mindepth 1 -printf '%P\\n' | LC_ALL=C sort |"
                       " cpio -o -H newc -R 0:0 --reproducible --quiet >\"$1\"",
                       "pack-initramfs", partial},
                      10min);
  pack.cwd = root;
  try {
    proc::run_checked(pack);
  } catch (...) {
    fs::remove(partial);
    throw;
  }
  fs::rename(partial, out);
  result.sha256 = sha256_file(out);
  result.size_bytes = fs::file_size(out);
  return result;
}

}  // namespace ks::boot

// The baremetal backend end to end, without real hardware: a QEMU "lab machine" (TCG)
// boots a kernel that can kexec, its root the host's (read-only, over 9p), and runs
// `ksandwich` there as a lab user would: `baremetal install`, then `run`. Every point
// kexecs the VM into the arm's kernel (the kernel git fixture's: control its first commit,
// patched the fifth, with the planted slowdown), the test kernel writes its records to the
// results device (a virtio disk) and returns, the lab's boot runs the installed hook and
// the run goes on. QEMU itself restarts the lab kernel on a reboot (-kernel), the way a
// lab machine's firmware boots its default entry.
//
// 1. kexec both ways: control, patched, control; each point on its arm's release.
// 2. return by reboot, the lab VM killed (SIGKILL) during the first point and started again
//    (the point runs again), the patched point hung past point_timeout_s (the watchdog
//    reboots the machine; the point fails; the run goes on).
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "boot/baremetal/switch.hpp"
#include "boot/qemu.hpp"
#include "support/kernel_history.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct Lab {
  fs::path dir;          // the lab's disk, mounted at the same path inside
  fs::path kernel;       // the lab kernel's bzImage
  std::string release;   // and its release
  int boots = 0;         // QEMU starts so far
};

json identity_of(const ks::proc::Result& r) {
  INFO(r.out << r.err);
  REQUIRE(r.ok());
  auto j = json::parse(r.out);
  return j.is_array() ? j.back() : j;
}

// The lab kernel: the fixture's first commit built as arm "lab", a release no arm has
// (6.1.192-ks-lab). It is the control's build relinked (the control arm is the same commit), so
// the test pays for no second full kernel build.
Lab make_lab(const fs::path& dir, const std::vector<std::string>& ids) {
  auto id = identity_of(ks::test::ksandwich_in_cache({"build", "--source", ks::test::history_fixture_dir().string(),
                                                      "--commit", ids[0], "--arm", "lab", "--json"}));
  Lab lab{dir, id["bzimage"]["path"].get<std::string>(), id["kernel_release"].get<std::string>()};
  // The results device: 64 MiB, sparse.
  ks::write_file(dir / "results.img", "");
  fs::resize_file(dir / "results.img", 64ull << 20);
  return lab;
}

// A baremetal screen on the fixture: control = its first commit, patched = the fifth.
json baremetal_experiment(const std::vector<std::string>& ids, const std::string& return_by, int ops, int rounds,
                          int timeout_s) {
  auto e = ks::test::clone_confirm("it-baremetal", ks::test::history_fixture_dir().string(), ids[0]);
  for (auto key : {"min_blocks", "max_blocks", "qemu", "cpu", "clock"}) e.erase(key);  // a lab times the wall
  e["backend"] = "baremetal";
  e["scheme"] = "screen";
  e["rounds"] = rounds;
  e["point_timeout_s"] = timeout_s;
  e["arms"]["patched"]["commit"] = ids[ks::test::kSlowFrom - 1];
  e["workloads"] = {{{"name", "clone"}, {"ops", ops}}};
  e["baremetal"] = {{"results_device", "/dev/vda"}, {"results_allow_overwrite", true}, {"return", return_by}};
  return e;
}

// The arms' kernels are built here (the lab has the source and the cache, not the time);
// then what a lab user types, once: install the boot hook, start the run.
void write_start(const Lab& lab, const json& experiment) {
  ks::write_file(lab.dir / "experiment.json", experiment.dump(2));
  auto built = ks::test::ksandwich_in_cache({"build", (lab.dir / "experiment.json").string(), "--arm", "all"});
  INFO(built.out << built.err);
  REQUIRE(built.ok());
  auto ksandwich = ks::test::ksandwich_binary().string();
  ks::write_file(lab.dir / "start.sh",
                 "export KSANDWICH_BAREMETAL_STATE=" + (lab.dir / "state").string() +
                     " KSANDWICH_CACHE=" + ks::test::integration_cache().string() + "\n" +
                     ksandwich + " baremetal install --unit-dir " + (lab.dir / "units").string() + "\n" +
                     ksandwich + " run " + (lab.dir / "experiment.json").string() + " --out " +
                     (lab.dir / "run").string() + "\n");
}

// Starts the lab machine and waits until it powers itself off (or ON_TICK kills it).
ks::proc::Result boot_lab(Lab& lab, std::function<void()> on_tick = {}) {
  using ks::boot::qemu_option_value;
  auto share = [](const fs::path& path, const std::string& tag, const std::string& extra) {
    return "local,path=" + qemu_option_value(path.string()) + ",mount_tag=" + tag + ",security_model=" + extra;
  };
  auto init = ks::test::source_dir() / "tests/integration/baremetal_lab_init.sh";
  ++lab.boots;
  ks::proc::Command cmd;
  cmd.argv = {"qemu-system-x86_64", "-nodefaults", "-no-user-config", "-display", "none",
              "-machine", "q35,accel=tcg", "-cpu", "max", "-smp", "1", "-m", "2048",
              "-kernel", lab.kernel.string(),
              "-append", "console=ttyS0 panic=-1 random.trust_cpu=on root=root rootfstype=9p "
                         "rootflags=trans=virtio,version=9p2000.L,msize=262144 ro init=" + init.string() +
                         " ks.lab=" + lab.dir.string() + " ks.cache=" + ks::test::integration_cache().string(),
              "-virtfs", share("/", "root", "none,readonly=on,multidevs=remap"),
              "-virtfs", share(lab.dir, "lab", "passthrough"),
              "-virtfs", share(ks::test::integration_cache(), "kscache", "passthrough"),
              "-drive", "file=" + qemu_option_value((lab.dir / "results.img").string()) + ",format=raw,if=none,id=results",
              "-device", "virtio-blk-pci,drive=results,serial=ks-results",
              "-serial", "file:" + (lab.dir / ("lab-console-" + std::to_string(lab.boots) + ".log")).string(),
              "-pidfile", (lab.dir / "qemu.pid").string()};
  cmd.timeout = std::chrono::minutes(30);
  cmd.log_file = lab.dir / "qemu.log";
  cmd.on_tick = std::move(on_tick);
  return ks::proc::run(cmd);
}

std::string lab_consoles(const Lab& lab) {
  std::string all;
  for (int i = 1; i <= lab.boots; ++i)
    all += ks::try_read_file(lab.dir / ("lab-console-" + std::to_string(i) + ".log")).value_or("");
  return all;
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The best ns/op of the clone rounds of POINT.
double best_ns(const json& bundle, int point) {
  double best = 0;
  for (auto& row : bundle["rows"])
    if (row["point"] == point && !row.value("warmup", false) && row["ns_per_op"].is_number())
      best = best == 0 ? row["ns_per_op"].get<double>() : std::min(best, row["ns_per_op"].get<double>());
  return best;
}

void require_lab() {
  ks::test::require_qemu_kernels();
  ks::test::require_root("QEMU's 9p shares of / and the kernel cache, the run's devices");
  auto r = ks::proc::run(ks::proc::command({"qemu-system-x86_64", "-device", "help"}));
  KS_SKIP_UNLESS(r.out.find("virtio-9p") != std::string::npos, "this QEMU has no virtio-9p (the lab's root)");
}

}  // namespace

TEST_CASE("baremetal: a QEMU lab machine kexecs into control, patched, control and back, resuming each time", "[concurrent]") {
  require_lab();
  auto ids = ks::test::history_fixture();
  ks::test::TempDir tmp("ks-baremetal");
  auto lab = make_lab(tmp.path, ids);
  auto e = baremetal_experiment(ids, "kexec", 500, 7, 300);
  e["baremetal"]["lab_kernel"] = lab.kernel.string();
  e["baremetal"]["lab_initrd"] = "";
  write_start(lab, e);

  auto started = Clock::now();
  auto r = boot_lab(lab);
  double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  auto consoles = lab_consoles(lab);
  INFO("lab consoles:\n" << consoles << "\nqemu: " << r.describe());
  REQUIRE(r.ok());
  REQUIRE(fs::exists(tmp.path / "run/bundle.json"));
  auto bundle = json::parse(ks::read_file(tmp.path / "run/bundle.json"));
  INFO(bundle["points"].dump(2).substr(0, 4000));

  CHECK(bundle["backend"] == "baremetal");
  CHECK(bundle["machine"]["lab"]["kernel_release"] == lab.release);
  CHECK(bundle["machine"]["switch"]["method"] == "kexec_file_load");
  REQUIRE(bundle["points"].size() == 3);
  for (int i = 0; i < 3; ++i) {
    const auto& p = bundle["points"][i];
    const std::string arm = p["arm"];
    CHECK(p["status"] == "ok");
    // The point ran on its arm's kexec'd kernel, not on the lab's.
    CHECK(p["kernel_release"] == bundle["builds"][arm]["kernel_release"]);
    CHECK(p["kernel_release"] != lab.release);
    CHECK(p["environment"]["switch"]["lab_release"] == lab.release);
    CHECK(p["environment"]["switch"]["return_by"] == "kexec");
    CHECK(p["environment"]["watchdog"].get<std::string>().ends_with("softdog.soft_margin 300 s"));
    CHECK(p["environment"]["kernel_cmdline"].get<std::string>().find("ksandwich.slot=") != std::string::npos);
    CHECK(fs::exists(tmp.path / "run" / p["log"].get<std::string>()));
    std::cout << "baremetal kexec: point " << i << " " << arm << " on " << p["kernel_release"].get<std::string>()
              << ": " << p["seconds"].get<double>() << " s (away from the lab "
              << p["environment"]["switch"]["away_s"].get<double>() << " s, boot to agent "
              << p["environment"]["boot_to_agent_s"] << " s), best clone " << best_ns(bundle, i) << " ns/op\n";
  }
  CHECK(bundle["points"][0]["kernel_release"] != bundle["points"][1]["kernel_release"]);
  // The planted 1000 us per clone shows on the patched kernel.
  CHECK(best_ns(bundle, 1) > 3 * std::max(best_ns(bundle, 0), best_ns(bundle, 2)));
  // Every switch came back through the installed hook: three resumes, then nothing waits.
  CHECK(count(consoles, "lab: boot hook:") == 3);
  CHECK(count(consoles, "ksandwich baremetal resume: going on with") == 3);
  CHECK_FALSE(fs::exists(tmp.path / "state/pending"));
  auto validated = ks::proc::run(ks::proc::command({ks::test::ksandwich_binary().string(), "validate",
                                                    (tmp.path / "run/bundle.json").string()}));
  INFO(validated.out << validated.err);
  CHECK(validated.ok());
  std::cout << "baremetal kexec: three points in " << seconds << " s of lab machine (TCG), verdict "
            << bundle["verdict"] << "\n";
}

TEST_CASE("baremetal: killed mid-point the lab reruns the point, and a hung test kernel is rebooted by the watchdog", "[concurrent]") {
  require_lab();
  auto ids = ks::test::history_fixture();
  ks::test::TempDir tmp("ks-baremetal");
  auto lab = make_lab(tmp.path, ids);
  // 3 rounds of 20,000 clones: about 4 s on control, over 60 s with the planted 1000 us,
  // past point_timeout_s = 45 s: that test kernel never finishes and its watchdog fires.
  auto e = baremetal_experiment(ids, "reboot", 20000, 3, 45);
  write_start(lab, e);

  // Power loss: the VM is killed as soon as the first test kernel marks its slot running.
  bool killed = false;
  boot_lab(lab, [&] {
    if (killed) return;
    std::string head(4096, '\0');
    std::ifstream(tmp.path / "results.img", std::ios::binary).read(head.data(), 4096);
    auto block = ks::boot::baremetal::parse_slot_block(head);
    if (block && block->state == "running") {
      auto pid = std::stoi(ks::trim(ks::read_file(tmp.path / "qemu.pid")));
      killed = kill(pid, SIGKILL) == 0;
    }
  });
  REQUIRE(killed);
  auto started = Clock::now();
  auto r = boot_lab(lab);  // the same disks: the machine powered on again
  double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  auto consoles = lab_consoles(lab);
  INFO("lab consoles:\n" << consoles << "\nqemu: " << r.describe());
  REQUIRE(r.ok());
  auto bundle = json::parse(ks::read_file(tmp.path / "run/bundle.json"));
  INFO(bundle["points"].dump(2).substr(0, 4000));
  REQUIRE(bundle["points"].size() == 3);
  const auto& p0 = bundle["points"][0];
  const auto& p1 = bundle["points"][1];
  const auto& p2 = bundle["points"][2];
  // The killed point ran again and finished: two switches on record.
  CHECK(p0["status"] == "ok");
  CHECK(p0["environment"]["switch"]["attempt"] == 2);
  CHECK(fs::exists(tmp.path / "run/points/00-control/switch-1.json"));
  CHECK(fs::exists(tmp.path / "run/points/00-control/switch-2.json"));
  CHECK(p0["kernel_release"] == bundle["builds"]["control"]["kernel_release"]);
  // The hung one: the watchdog rebooted the machine, the point failed, the run went on.
  CHECK(p1["status"] == "failed");
  CHECK(p1["failure"].get<std::string>().find("watchdog") != std::string::npos);
  CHECK(p1["seconds"].get<double>() >= 45);
  CHECK(p2["status"] == "ok");
  CHECK(p2["environment"]["switch"]["return_by"] == "reboot");
  CHECK(bundle["verdict"] == "INVALID");
  CHECK_FALSE(fs::exists(tmp.path / "state/pending"));
  std::cout << "baremetal reboot: killed point rerun, " << p0["seconds"].get<double>() << " s in all; hung point failed after "
            << p1["seconds"].get<double>() << " s (" << p1["failure"].get<std::string>() << "); last point "
            << p2["seconds"].get<double>() << " s; " << seconds << " s after the restart\n";
}

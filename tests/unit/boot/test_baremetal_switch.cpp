// The bare-metal backend's pure side (boot/baremetal/switch.hpp): its experiment section,
// the results slot's header, what the lab makes of a switch once it is back, and what the
// test kernel is given.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "boot/baremetal/switch.hpp"
#include "experiment/experiment.hpp"
#include "util/error.hpp"

using nlohmann::json;
namespace bm = ks::boot::baremetal;
using Kind = bm::Outcome::Kind;

namespace {

ks::experiment::Experiment experiment() {
  return ks::experiment::parse(json{{"name", "t"},
                                    {"backend", "baremetal"},
                                    {"point_timeout_s", 120},
                                    {"storage", {{"kind", "brd"}, {"size_mib", 256}}},
                                    {"baremetal", {{"results_device", "/dev/sdb2"}}},
                                    {"arms", {{"control", json::object()}, {"patched", {{"cmdline", {"mitigations=off"}}}}}},
                                    {"workloads", {{{"name", "clone"}, {"ops", 100}}}}});
}

bm::Switch switched(double at, int attempt = 1) {
  bm::Switch s;
  s.slot = "0123456789abcdef";
  s.switched_at = at;
  s.attempt = attempt;
  return s;
}

bm::SlotHeader header(const std::string& state, uint64_t bytes = 0) { return {"0123456789abcdef", state, bytes}; }

}  // namespace

TEST_CASE("baremetal options: results_device is required, return is reboot or kexec, lab_* only for kexec") {
  auto o = bm::parse_options(json{{"results_device", "/dev/sdb2"}});
  CHECK(o.results_device == "/dev/sdb2");
  CHECK(o.return_by == "reboot");
  CHECK_FALSE(o.results_allow_overwrite);
  CHECK_FALSE(o.lab_initrd);
  auto k = bm::parse_options(json{{"results_device", "/dev/sdb2"}, {"return", "kexec"}, {"lab_initrd", ""}});
  CHECK(k.return_by == "kexec");
  CHECK(k.lab_initrd == std::optional<std::string>(""));

  CHECK_THROWS_WITH(bm::parse_options(json()), Catch::Contains("needs its section"));
  CHECK_THROWS_WITH(bm::parse_options(json::object()), Catch::Contains("/baremetal/results_device: is required"));
  CHECK_THROWS_WITH(bm::parse_options(json{{"results_device", "sdb2"}}), Catch::Contains("not a device under /dev"));
  CHECK_THROWS_WITH(bm::parse_options(json{{"results_device", "/dev/sdb2"}, {"return", "poweroff"}}),
                    Catch::Contains("/baremetal/return"));
  CHECK_THROWS_WITH(bm::parse_options(json{{"results_device", "/dev/sdb2"}, {"lab_kernel", "/boot/vmlinuz"}}),
                    Catch::Contains("only applies to \"return\": \"kexec\""));
  CHECK_THROWS_WITH(bm::parse_options(json{{"results_device", "/dev/sdb2"}, {"results_allow_overwrite", "yes"}}),
                    Catch::Contains("true or false"));
  CHECK_THROWS_WITH(bm::parse_options(json{{"results_device", "/dev/sdb2"}, {"device", "/dev/sda"}}),
                    Catch::Contains("/baremetal/device: unknown key"));
  CHECK_NOTHROW(bm::parse_options(json{{"results_device", "/dev/sdb2"}, {"_why", "a comment"}}));
}

TEST_CASE("baremetal slot: the header is one line in a zero-padded block, read back exactly") {
  auto block = bm::slot_block(header("done", 12345));
  CHECK(block.size() == bm::kSlotHeaderBytes);
  CHECK(block.starts_with("KSANDWICH-RESULTS 1 0123456789abcdef done 12345\n"));
  CHECK(block.back() == '\0');
  auto back = bm::parse_slot_block(block);
  REQUIRE(back);
  CHECK(back->slot == "0123456789abcdef");
  CHECK(back->state == "done");
  CHECK(back->bytes == 12345);
  // What init.sh writes reads the same (printf ... | dd conv=sync).
  CHECK(bm::parse_slot_block("KSANDWICH-RESULTS 1 abc running 0\n")->state == "running");

  CHECK_FALSE(bm::parse_slot_block(std::string(4096, '\0')));  // a fresh disk
  CHECK_FALSE(bm::parse_slot_block("KSANDWICH-RESULTS 1 abc lost 0\n"));
  CHECK_FALSE(bm::parse_slot_block("KSANDWICH-RESULTS 1 abc done -5\n"));
  CHECK_FALSE(bm::parse_slot_block("KSANDWICH-RESULTS 1 abc done 1"));  // no end of line
  CHECK_FALSE(bm::parse_slot_block("KSANDWICH-RESULTS 2 abc done 1\n"));
}

TEST_CASE("baremetal return: collect a finished slot, fail a hung one, rerun a point the machine lost") {
  const double t = 1'700'000'000;
  CHECK(bm::judge_return(switched(t), header("done", 10), t + 50, 120).kind == Kind::Collect);

  auto other = bm::judge_return(switched(t), bm::SlotHeader{"ffff", "done", 10}, t + 50, 120);
  CHECK(other.kind == Kind::Failed);
  CHECK_THAT(other.why, Catch::Contains("no longer holds this point's slot"));
  CHECK(bm::judge_return(switched(t), std::nullopt, t + 50, 120).kind == Kind::Failed);

  auto hung = bm::judge_return(switched(t), header("running"), t + 130, 120);
  CHECK(hung.kind == Kind::Failed);
  CHECK_THAT(hung.why, Catch::Contains("watchdog") && Catch::Contains("point_timeout_s = 120"));

  auto never = bm::judge_return(switched(t), header("armed"), t + 400, 120);
  CHECK(never.kind == Kind::Failed);
  CHECK_THAT(never.why, Catch::Contains("never started its init"));

  auto lost = bm::judge_return(switched(t), header("running"), t + 30, 120);
  CHECK(lost.kind == Kind::Rerun);
  CHECK_THAT(lost.why, Catch::Contains("reset or lost power") && Catch::Contains("running the point again"));
  auto twice = bm::judge_return(switched(t, bm::kMaxAttempts), header("armed"), t + 5, 120);
  CHECK(twice.kind == Kind::Failed);

  // More results than a point may send is not read.
  CHECK(bm::judge_return(switched(t), header("done", bm::kMaxResultBytes + 1), t + 50, 120).kind == Kind::Failed);
  // A clock that went back counts as no time away.
  CHECK(bm::judge_return(switched(t), header("running"), t - 1000, 120).kind == Kind::Rerun);
}

TEST_CASE("baremetal test kernel: the watchdog's margin and the slot on its command line, the arm's words last") {
  auto e = experiment();
  auto line = bm::test_cmdline(e, e.arms.at("patched"), "00ff");
  CHECK_THAT(line, Catch::Contains("panic=-1") && Catch::Contains("brd.rd_size=262144") &&
                       Catch::Contains("softdog.soft_margin=120 ksandwich.slot=00ff"));
  CHECK(line.ends_with(" mitigations=off"));
  CHECK(bm::watchdog_margin_s(604800) == 65535);  // softdog's largest

  auto plan = bm::test_plan(e, e.arms.at("control"), "kexec", "root=/dev/sda1 ro quiet");
  CHECK_THAT(plan, Catch::Contains("KS_RESULTS=slot\n") && Catch::Contains("KS_RETURN='kexec'\n") &&
                       Catch::Contains("KS_LAB_CMDLINE='root=/dev/sda1 ro quiet'\n") &&
                       Catch::Contains("KS_DEVICE='/dev/ram0'"));
  CHECK_THAT(plan, !Catch::Contains("KS_DEVICE_IDENTITY"));
  // The agent pins itself to the experiment's own CPU: the test kernel runs on the machine's.
  e.cpu = 3;
  CHECK_THAT(bm::test_plan(e, e.arms.at("control"), "reboot", ""), Catch::Contains("'--cpu' '3'"));
}

TEST_CASE("baremetal storage: a named device is formatted in the test kernel under the usual guard") {
  auto j = json{{"name", "t"},
                {"backend", "baremetal"},
                {"storage", {{"kind", "device"}, {"device", "/dev/nvme0n1"}, {"allow_overwrite", true}}},
                {"baremetal", {{"results_device", "/dev/sdb2"}}},
                {"arms", {{"control", json::object()}, {"patched", json::object()}}},
                {"workloads", {{{"name", "clone"}, {"ops", 100}}}}};
  auto e = ks::experiment::parse(j);
  // The test kernel finds the drive by its identity, not by the lab kernel's name for it.
  CHECK_THAT(bm::test_plan(e, e.arms.at("control"), "reboot", "", "eui.0025388b71b2c4a1"),
             Catch::Contains("KS_DEVICE_IDENTITY='eui.0025388b71b2c4a1'\n"));
  j["storage"] = {{"kind", "zram"}};
  CHECK_THROWS_WITH(ks::experiment::parse(j), Catch::Contains("not available on the baremetal backend"));
}

TEST_CASE("baremetal hook: the unit runs `baremetal resume` at boot only while a run waits") {
  auto unit = bm::resume_unit("/usr/bin/ksandwich", "/var/lib/ksandwich/baremetal");
  CHECK_THAT(unit, Catch::Contains("\nExecStart=/usr/bin/ksandwich baremetal resume\n") &&
                       Catch::Contains("\nConditionPathExists=/var/lib/ksandwich/baremetal/pending\n") &&
                       Catch::Contains("\nEnvironment=KSANDWICH_BAREMETAL_STATE=/var/lib/ksandwich/baremetal\n") &&
                       Catch::Contains("\nWantedBy=multi-user.target\n"));
  CHECK(unit.starts_with("# Written by `ksandwich baremetal install`"));
  auto with_cache = bm::resume_unit("/usr/bin/ksandwich", "/var/lib/ksandwich/baremetal",
                                    {{"KSANDWICH_CACHE", "/srv/kernels"}});
  CHECK_THAT(with_cache, Catch::Contains("\nEnvironment=KSANDWICH_BAREMETAL_STATE=/var/lib/ksandwich/baremetal "
                                         "KSANDWICH_CACHE=/srv/kernels\n"));
}

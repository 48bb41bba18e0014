// Experiment files travel between people: what a hostile or careless file can say is
// refused by the parser, with the place, the problem and what to write instead.
#include <catch2/catch.hpp>
#include <string>

#include "experiment/experiment.hpp"
#include "support/experiments.hpp"
#include "experiment/strict_json.hpp"
#include "util/error.hpp"

using ks::experiment::parse;
using ks::experiment::parse_text;
using ks::test::minimal_experiment;
using ks::test::parse_error_of;
using nlohmann::json;

namespace {

json with_workload(json w) {
  auto j = minimal_experiment();
  j["workloads"] = json::array({std::move(w)});
  return j;
}

std::string text_error_of(const std::string& text) {
  try {
    parse_text(text, "exp.json");
  } catch (const ks::UserError& e) {
    CHECK_FALSE(e.hint().empty());
    return e.what();
  }
  return "(no error)";
}

const std::string kMinimalText =
    R"({"name": "t", "arms": {"control": {}, "patched": {}}, "workloads": [{"name": "clone"}]})";

}  // namespace

TEST_CASE("hostile: a workload label is a name, never a path") {
  for (std::string label : std::vector<std::string>{"../../../../tmp/x/escaped", "/tmp/x", "a/b", ".", "..", "", std::string(65, 'a'),
                            "sp ace", "new\nline"}) {
    INFO(label);
    CHECK_THAT(parse_error_of(with_workload({{"name", "buffered-write"}, {"label", label}, {"size_mib", 8}})),
               Catch::Contains("/workloads/0/label") && Catch::Contains("plain name"));
  }
  for (std::string label : std::vector<std::string>{"clone-64k", "a", "A.b_c-1", std::string(64, 'z'), "..."}) {
    INFO(label);
    CHECK(parse(with_workload({{"name", "clone"}, {"label", label}})).workloads[0].id() == label);
  }
}

TEST_CASE("hostile: an experiment's name is a name, never a path") {
  // It names results/<name> of a submit and <name>-<sha12>.json of a bisection's experiments.
  for (std::string name : std::vector<std::string>{"../../../../tmp/x/escaped", "/tmp/x", "a/b", ".", "..",
                                                   std::string(65, 'a'), "sp ace", "new\nline"}) {
    INFO(name);
    auto j = minimal_experiment();
    j["name"] = name;
    CHECK_THAT(parse_error_of(j), Catch::Contains("/name") && Catch::Contains("plain name"));
  }
  auto j = minimal_experiment();
  j["name"] = "it-bisect-e894008ed36c";
  CHECK(parse(j).name == "it-bisect-e894008ed36c");
}

TEST_CASE("hostile: an fio job is the name of a shipped job file, never a path") {
  for (std::string job : {"../../../../etc/hostname", "/etc/hostname", "sub/dio-randwrite.fio", "hostname",
                          ".fio", "../x.fio"}) {
    INFO(job);
    CHECK_THAT(parse_error_of(with_workload({{"name", "fio"}, {"job", job}})), Catch::Contains("/workloads/0/job"));
  }
  CHECK(parse(with_workload({{"name", "fio"}, {"job", "dio-randwrite.fio"}})).workloads[0].fio_job ==
        "dio-randwrite.fio");
}

TEST_CASE("hostile: sysfs knobs are plain paths under /sys/ or /proc/sys/") {
  for (std::string path : {"/sys/../tmp/x/knob.txt", "/sys/./kernel/x", "/sys//kernel/x", "/proc/sys/../../tmp/x",
                           "/sys/", "/sys/kernel/..", "/proc/self/x", "sys/kernel/x", "/etc/passwd"}) {
    INFO(path);
    auto j = minimal_experiment();
    j["arms"]["patched"]["sysfs"] = {{path, "v"}};
    CHECK_THAT(parse_error_of(j), Catch::Contains("/arms/patched/sysfs") && Catch::Contains("plain path"));
  }
  // Issue 27, second attack: a knob that names a program the kernel runs as root, or one that
  // removes a device, is no tunable.
  for (std::string path : {"/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe", "/sys/kernel/uevent_helper",
                           "/proc/sys/fs/binfmt_misc/register", "/sys/block/sda/device/delete",
                           "/proc/sys/kernel/poweroff_cmd", "/sys/power/state", "/proc/sys/vm/mmap_min_addr",
                           "/proc/sys/kernel/randomize_va_space", "/sys/module/firmware_class/parameters/path",
                           // Issue 27, third attack: a CPU taken away, SMT off until a reboot,
                           // the machine's hold on its memory.
                           "/sys/devices/system/cpu/cpu1/online", "/sys/devices/system/cpu/smt/control",
                           "/sys/devices/system/cpu/microcode/reload", "/sys/devices/system/cpu/hotplug/states",
                           "/proc/sys/vm/panic_on_oom", "/proc/sys/vm/overcommit_memory",
                           "/proc/sys/vm/admin_reserve_kbytes", "/proc/sys/vm/oom_kill_allocating_task",
                           "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "/sys/kernel/mm/ksm/run"}) {
    INFO(path);
    auto j = minimal_experiment();
    j["arms"]["patched"]["sysfs"] = {{path, "|/tmp/x"}};
    CHECK_THAT(parse_error_of(j), Catch::Contains("/arms/patched/sysfs") && Catch::Contains("not a knob an experiment may set"));
  }
  auto j = minimal_experiment();
  j["arms"]["patched"]["sysfs"] = {{"/sys/block/loop0/queue/read_ahead_kb", 4096},
                                   {"/proc/sys/vm/dirty_ratio", "10"},
                                   {"/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance"},
                                   {"/sys/devices/system/cpu/cpu1/cpuidle/state2/disable", "1"},
                                   {"/sys/devices/system/cpu/intel_pstate/no_turbo", "1"},
                                   {"/sys/kernel/mm/transparent_hugepage/enabled", "never"},
                                   {"/proc/sys/vm/drop_caches", "3"},
                                   {"/sys/module/btrfs/parameters/x", "1"}};
  auto e = parse(j);
  CHECK(e.arms["patched"].sysfs.at("/sys/block/loop0/queue/read_ahead_kb") == "4096");
}

TEST_CASE("hostile: numbers never wrap, round or go negative into unsigned fields") {
  struct Case {
    const char* pointer;
    json value;
  };
  std::vector<Case> cases = {
      {"/workloads/0/ops", 1e30},       {"/rounds", 4294967296ULL},     {"/rounds", 1e12},
      {"/warmup_rounds", -1},           {"/point_timeout_s", 4294967296ULL}, {"/blocks", 4294967296ULL},
      {"/workloads/0/ops", 2.5},        {"/cpu", 0.5},                  {"/seed", -1},
      {"/storage/size_mib", 1},         {"/rounds", "5"},               {"/rounds", true},
      {"/rounds", nullptr},             {"/workloads/0/ops", -5},       {"/seed", 18446744073709551615ULL},
      {"/cpu", -2},                     {"/qemu/vcpus", 0},             {"/gates/material_pct", 0},
      {"/workloads/0/ops", 1.0e19},
  };
  for (auto& c : cases) {
    auto j = minimal_experiment();
    j[json::json_pointer(c.pointer)] = c.value;
    INFO(c.pointer << " = " << c.value.dump());
    CHECK_THAT(parse_error_of(j), Catch::Contains(c.pointer));
  }
  // A whole number written as 3.0 is still the integer 3, as the schema says.
  auto j = minimal_experiment();
  j["workloads"][0]["ops"] = 3.0;
  CHECK(parse(j).workloads[0].ops == 3);
}

TEST_CASE("hostile: NUL bytes, escaped NULs, duplicate keys and deep nesting are refused") {
  CHECK(text_error_of(kMinimalText) == "(no error)");
  SECTION("a raw NUL byte, even after the document") {
    std::string text = kMinimalText + std::string(1, '\0') + "{\"rounds\": 0}";
    CHECK_THAT(text_error_of(text), Catch::Contains("NUL byte"));
    text = kMinimalText;
    text.insert(9, 1, '\0');
    CHECK_THAT(text_error_of(text), Catch::Contains("NUL byte"));
  }
  SECTION("\\u0000 in a string or a key") {
    std::string text = kMinimalText;
    text.replace(text.find("\"t\""), 3, "\"t\\u0000evil\"");
    CHECK_THAT(text_error_of(text), Catch::Contains("/name") && Catch::Contains("NUL character"));
    CHECK_THAT(text_error_of(R"({"_x\u0000": 1, )" + kMinimalText.substr(1)), Catch::Contains("NUL character"));
    // The same through parse(json), as --resume reads the experiment kept in a bundle.
    auto j = minimal_experiment();
    j["name"] = std::string("t\0evil", 6);
    CHECK_THAT(parse_error_of(j), Catch::Contains("NUL character"));
  }
  SECTION("a duplicate key, at the top and deeper down") {
    CHECK_THAT(text_error_of(R"({"rounds": 5, "rounds": 0, )" + kMinimalText.substr(1)),
               Catch::Contains("\"rounds\" appears twice") && Catch::Contains("/rounds"));
    std::string text = kMinimalText;
    text.replace(text.find("{\"name\": \"clone\"}"), 17, R"({"name": "clone", "ops": 1, "ops": 2})");
    CHECK_THAT(text_error_of(text), Catch::Contains("/workloads/0/ops") && Catch::Contains("twice"));
    // The same key in two different objects is fine.
    CHECK(text_error_of(R"({"name": "t", "arms": {"control": {"_c": 1}, "patched": {"_c": 1}},
                           "workloads": [{"name": "clone", "_c": 1}]})") == "(no error)");
  }
  SECTION("too many values: refused before a tree is built, and a long array of objects is read in linear time") {
    std::string many = R"({"name": "t", "_x": [)";
    for (size_t i = 0; i < ks::experiment::kMaxJsonValues; ++i) many += "0,";
    many += "0]}";
    CHECK_THAT(text_error_of(many), Catch::Contains("more than 4000000 JSON values"));
    // 300,000 objects in one array: about 15 s with the callback parser, which is quadratic.
    std::string objects = R"({"_x": [)";
    for (int i = 0; i < 300000; ++i) objects += "{},";
    objects += "{}], " + kMinimalText.substr(1);
    CHECK(text_error_of(objects) == "(no error)");
  }
  SECTION("nesting far too deep: a message, not a stack overflow") {
    std::string deep = R"({"name": "t", "_x": )" + std::string(200000, '[') + std::string(200000, ']') + "}";
    CHECK_THAT(text_error_of(deep), Catch::Contains("deeper than 64"));
    json j = minimal_experiment();
    json* at = &j["_x"];
    for (int i = 0; i < 100; ++i) at = &((*at)["a"] = json::object());
    CHECK_THAT(parse_error_of(j), Catch::Contains("deeper than 64"));
  }
}

TEST_CASE("hostile: a key that does not apply to the chosen kind is refused, not ignored") {
  auto j = minimal_experiment();
  j["storage"] = {{"kind", "auto"}, {"device", "/dev/sda"}};
  CHECK_THAT(parse_error_of(j), Catch::Contains("/storage/device") && Catch::Contains("does not apply"));
  j["storage"] = {{"kind", "zram"}, {"allow_overwrite", true}};
  CHECK_THAT(parse_error_of(j), Catch::Contains("/storage/allow_overwrite"));
  j["storage"] = {{"kind", "device"}, {"device", "/dev/sdz"}, {"size_mib", 1024}};
  CHECK_THAT(parse_error_of(j), Catch::Contains("/storage/size_mib"));
  j["storage"] = {{"kind", "device"}, {"device", "/dev/sdz"}, {"allow_overwrite", true}};
  CHECK(parse(j).storage.allow_overwrite);

  CHECK_THAT(parse_error_of(with_workload({{"name", "buffered-write"}, {"ops", 5}})),
             Catch::Contains("/workloads/0/ops") && Catch::Contains("does not apply"));
  CHECK_THAT(parse_error_of(with_workload({{"name", "clone"}, {"job", "dio-randwrite.fio"}})),
             Catch::Contains("/workloads/0/job"));
  CHECK_THAT(parse_error_of(with_workload({{"name", "clone"}, {"runtime_s", 2}})), Catch::Contains("/workloads/0/runtime_s"));
  CHECK_THAT(parse_error_of(with_workload({{"name", "dedupe"}, {"block_kib", 4}})), Catch::Contains("/workloads/0/block_kib"));
  CHECK_THAT(parse_error_of(with_workload({{"name", "buffered-write"}, {"size_mib", 3}, {"block_kib", 2048}})),
             Catch::Contains("whole number of block_kib blocks"));
}

TEST_CASE("hostile: mkfs options cannot name another device, a label or a directory to copy, or skip mkfs") {
  for (json options : {json{"/dev/sda"}, json{"-n", "16384", "/dev/sda"}, json{"-L", "x"}, json{"--label=x"},
                       json{"--rootdir", "/etc"}, json{"-n"}, json{"-O", "list-all"}, json{"--features=list-all"},
                       json{"-R", "list-all"}, json{"--help"}, json{"-V"},
                       json{"-Olist-all"}, json{"-O", "no-holes,list-all"},
                       // Issue 27, second attack: bundled letters and long names cut short.
                       json{"-fr/etc/ssh"}, json{"-Kr/etc/ssh"}, json{"--ro=/etc/ssh"}, json{"--lab=evil"},
                       json{"-fLevil"}, json{"-fOlist-all"}, json{"--feat=list-all"}, json{"--subv=x"}}) {
    INFO(options.dump());
    auto j = minimal_experiment();
    j["storage"] = {{"mkfs_options", options}};
    CHECK_THAT(parse_error_of(j), Catch::Contains("/storage/mkfs_options"));
    j = minimal_experiment();
    j["arms"]["patched"]["mkfs_options"] = options;
    CHECK_THAT(parse_error_of(j), Catch::Contains("/arms/patched/mkfs_options"));
  }
  auto j = minimal_experiment();
  j["storage"] = {{"mkfs_options", {"-n", "16384", "-O", "no-holes", "--csum", "blake2", "-M"}}};
  CHECK_NOTHROW(parse(j));
  j["storage"] = {{"mkfs_options", {"-n16384", "--features=no-holes", "--nodesize", "65536", "-K", "--mixed"}}};
  CHECK_NOTHROW(parse(j));
}

TEST_CASE("the confirm planning fields: defaults, bounds, and a screen accepts them") {
  auto e = parse(minimal_experiment());
  CHECK(e.qemu.accel == "auto");
  CHECK(e.target_mde_pct == 5.0);
  CHECK(e.min_blocks == 3);
  CHECK(e.max_blocks == 12);

  auto j = minimal_experiment();
  j["scheme"] = "confirm";
  j["qemu"] = {{"accel", "tcg"}};
  j["target_mde_pct"] = 2.5;
  j["min_blocks"] = 3;
  j["max_blocks"] = 100;
  e = parse(j);
  CHECK(e.qemu.accel == "tcg");
  CHECK(e.target_mde_pct == 2.5);
  CHECK(e.min_blocks == 3);
  CHECK(e.max_blocks == 100);
  j["scheme"] = "screen";
  CHECK_NOTHROW(parse(j));  // ignored by a screen

  j = minimal_experiment();
  j["qemu"] = {{"accel", "kvm"}};
  CHECK(parse(j).qemu.accel == "kvm");
  j["qemu"] = {{"accel", "xen"}};
  CHECK_THAT(parse_error_of(j), Catch::Contains("/qemu/accel"));
  j = minimal_experiment();
  j["min_blocks"] = 8;
  j["max_blocks"] = 5;
  CHECK_THAT(parse_error_of(j), Catch::Contains("/max_blocks") && Catch::Contains("less than min_blocks"));
  j = minimal_experiment();
  j["target_mde_pct"] = 0;
  CHECK_THAT(parse_error_of(j), Catch::Contains("/target_mde_pct"));
  j["target_mde_pct"] = "5";
  CHECK_THAT(parse_error_of(j), Catch::Contains("/target_mde_pct"));
}

TEST_CASE("hostile: a knob's resolved path must be a tunable too, and mount options are btrfs's own") {
  // What /sys links lead to (the host backend checks the canonical path with the same table).
  CHECK(ks::experiment::is_tunable_knob("/sys/devices/pci0000:00/0000:00:04.0/virtio1/block/vda/queue/read_ahead_kb"));
  CHECK_FALSE(ks::experiment::is_tunable_knob("/sys/devices/system/memory/memory0/online"));
  CHECK_FALSE(ks::experiment::is_tunable_knob("/sys/bus/cpu/drivers_autoprobe"));
  CHECK_FALSE(ks::experiment::is_tunable_knob("/sys/bus/virtio/drivers/virtio_blk/unbind"));
  CHECK_FALSE(ks::experiment::is_tunable_knob("/sys/devices/pci0000:00/0000:00:02.0/virtio1/power/control"));
  for (std::string option : {"X-mount.mode=1777", "x-mount.owner=nobody", "device=/dev/vda", "context=system_u",
                             "noatime,X-mount.mkdir",
                             // Issue 27, third attack: mount(8)'s own options, and what a test fs needs not.
                             "bind", "move", "remount", "loop=/dev/loop0", "offset=0", "helper=foo", "suid", "dev",
                             "exec", "shared"}) {
    INFO(option);
    auto j = minimal_experiment();
    j["storage"] = {{"mount_options", {option}}};
    CHECK_THAT(parse_error_of(j), Catch::Contains("/storage/mount_options"));
  }
  auto j = minimal_experiment();
  j["storage"] = {{"mount_options", {"noatime", "compress=zstd:1", "space_cache=v2", "Commit=30", "nodatacow", "lazytime"}}};
  CHECK_NOTHROW(parse(j));
}

TEST_CASE("hostile: a screen's order holds at most 200 points, as many as a confirm makes (nineteenth attack)") {
  auto j = minimal_experiment();
  j["order"] = json::array();
  for (int i = 0; i < 200; ++i) j["order"].push_back(i % 2 && i != 199 ? "patched" : "control");
  CHECK_NOTHROW(parse(j));
  j["order"].push_back("control");
  CHECK_THAT(parse_error_of(j), Catch::Contains("more than 200 points"));
}

TEST_CASE("hostile: at most 64 workloads, the most a bundle's reader takes (sixteenth attack)") {
  auto j = minimal_experiment();
  j["workloads"] = json::array();
  for (size_t i = 0; i < ks::experiment::kMaxWorkloads; ++i) j["workloads"].push_back({{"name", "clone"}, {"label", "w" + std::to_string(i)}});
  CHECK_NOTHROW(parse(j));
  j["workloads"].push_back({{"name", "clone"}, {"label", "one-more"}});
  CHECK_THAT(parse_error_of(j), Catch::Contains("more than 64 workloads"));
}

TEST_CASE("hostile: at most 64 direct-hit functions, each once (forty-third attack)") {
  // 100,000 of them in a 257 KB bundle cost every reader 35 s and more than a gigabyte.
  auto j = minimal_experiment();
  j["direct_hits"] = json::array();
  for (size_t i = 0; i < ks::experiment::kMaxDirectHits; ++i) j["direct_hits"].push_back({{"function", "f" + std::to_string(i)}});
  CHECK_NOTHROW(parse(j));
  j["direct_hits"].push_back({{"function", "one_more"}});
  CHECK_THAT(parse_error_of(j), Catch::Contains("more than 64 functions"));
  j["direct_hits"] = {{{"function", "btrfs_remap_file_range"}}, {{"function", "btrfs_remap_file_range"}, {"required", false}}};
  CHECK_THAT(parse_error_of(j), Catch::Contains("is counted twice"));
}

TEST_CASE("hostile: no workload has a name the run's gates use (forty-fourth attack)") {
  // Labelled "builds", a workload took the matched-builds gate from every other.
  for (const char* scope : {"builds", "experiment"}) {
    auto j = minimal_experiment();
    j["workloads"][0]["label"] = scope;
    CHECK_THAT(parse_error_of(j), Catch::Contains("has a name the run's gates use"));
  }
}

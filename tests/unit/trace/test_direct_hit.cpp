// Direct hits, pure half: tracefs texts in, per-function counts and gates out.
#include <catch2/catch.hpp>

#include "trace/direct_hit.hpp"

using namespace ks::trace;
using nlohmann::json;

namespace {

// Shaped like a real available_filter_functions: built-in names, a module's names with
// " [module]", a static name listed twice, compiler clones, a long name.
const char* kAvailable =
    "vfs_clone_file_range\n"
    "btrfs_clone_files\n"
    "btrfs_remap_file_range\n"
    "btrfs_extent_same_range.isra.0\n"
    "btrfs_cont_expand.constprop.0\n"
    "btrfs_cont_expand.part.0\n"
    "btrfs_cont_expand_tail\n"
    "init_once\n"
    "init_once\n"
    "btrfs_replace_file_extents_with_a_long_name\n"
    "btrfs_replace_file_extents_with_another_name\n"
    "ext4_ioctl [ext4]\n"
    "ext4_ioctl_setflags [ext4]\n";

// trace_stat/function0 and function1 of a kernel without the graph tracer: names cut at 30.
const char* kProfileCpu0 =
    "  Function                               Hit\n"
    "  --------                               ---\n"
    "  btrfs_remap_file_range                 600\n"
    "  btrfs_clone_files                      600\n"
    "  btrfs_replace_file_extents_wit          17\n"
    "  init_once                                2\n"
    "  init_once                                1\n";
// ... and with the graph tracer: time columns follow the hit count.
const char* kProfileCpu1 =
    "  Function                               Hit    Time            Avg             s^2\n"
    "  --------                               ---    ----            ---             ---\n"
    "  btrfs_remap_file_range                 400    1234.567 us     3.086 us        1.234 us\n"
    "  btrfs_cont_expand.constprop.0            5    10.100 us       2.020 us        0.101 us\n";

const char* kTrace =
    "# tracer: function\n"
    "#\n"
    "# entries-in-buffer/entries-written: 5/7   #P:2\n"
    "#\n"
    "#                                _-----=> irqs-off/BH-disabled\n"
    "#                               / _----=> need-resched\n"
    "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n"
    "#              | |         |   |||||     |         |\n"
    " ksandwich-agent-4242    [001] .....   123.456789: btrfs_remap_file_range <-vfs_clone_file_range\n"
    " ksandwich-agent-4242    [001] .....   123.456795: btrfs_clone_files <-btrfs_remap_file_range\n"
    "    kworker/u4:2-77      [000] ...1.   123.456800: btrfs_remap_file_range <-vfs_clone_file_range\n"
    "     odd: name-99        [000] .....   123.456900: btrfs_remap_file_range <-vfs_clone_file_range\n"
    "           <idle>-0      [000] d..1.   123.457000: btrfs_cont_expand.constprop.0\n";

TraceCapture profiler_capture() {
  TraceCapture c;
  c.method = kFunctionProfiler;
  c.available_filter_functions = kAvailable;
  c.set_ftrace_filter = "btrfs_remap_file_range\nbtrfs_clone_files\ninit_once\ninit_once\n";
  c.profile_stats = {kProfileCpu0, kProfileCpu1};
  return c;
}

const FunctionCount& find(const std::vector<FunctionCount>& counts, const std::string& f) {
  for (auto& c : counts)
    if (c.function == f) return c;
  FAIL("no count for " << f);
  throw;
}

}  // namespace

TEST_CASE("trace: available_filter_functions lists names and modules and duplicates", "[trace]") {
  auto names = parse_function_list(kAvailable);
  CHECK(names.at("btrfs_remap_file_range") == 1);
  CHECK(names.at("ext4_ioctl") == 1);  // " [ext4]" is not part of the name
  CHECK(names.at("init_once") == 2);
  CHECK(names.count("[ext4]") == 0);

  // set_ftrace_filter when empty, and with a trigger installed.
  CHECK(parse_function_list("#### all functions enabled ####\n").empty());
  auto filter = parse_function_list("do_trap:traceoff:count=3\nvfs_read\n");
  CHECK(filter.size() == 1);
  CHECK(filter.count("vfs_read") == 1);
}

TEST_CASE("trace: a function stands for itself and its compiler clones but not its parts",
          "[trace]") {
  auto available = parse_function_list(kAvailable);
  CHECK(symbols_for("btrfs_remap_file_range", available) ==
        std::vector<std::string>{"btrfs_remap_file_range"});
  CHECK(symbols_for("btrfs_extent_same_range", available) ==
        std::vector<std::string>{"btrfs_extent_same_range.isra.0"});
  // .part.0 is a piece called from the function itself; _tail is another function.
  CHECK(symbols_for("btrfs_cont_expand", available) ==
        std::vector<std::string>{"btrfs_cont_expand.constprop.0"});
  CHECK(symbols_for("btrfs_no_such_function", available).empty());
}

TEST_CASE("trace: trace_stat parses with and without the graph tracer's columns", "[trace]") {
  auto cpu0 = parse_function_profile(kProfileCpu0);
  CHECK(cpu0.at("btrfs_remap_file_range") == 600);
  CHECK(cpu0.at("init_once") == 3);  // two static functions, one name: summed
  CHECK(cpu0.count("Function") == 0);
  CHECK(cpu0.count("--------") == 0);
  auto cpu1 = parse_function_profile(kProfileCpu1);
  CHECK(cpu1.at("btrfs_remap_file_range") == 400);
  CHECK(cpu1.at("btrfs_cont_expand.constprop.0") == 5);
  CHECK(cpu1.size() == 2);
}

TEST_CASE("trace: the function tracer's lines are counted by function", "[trace]") {
  auto lines = count_trace_lines(kTrace);
  CHECK(lines.at("btrfs_remap_file_range") == 3);  // a task name with ": " does not confuse it
  CHECK(lines.at("btrfs_clone_files") == 1);
  CHECK(lines.at("btrfs_cont_expand.constprop.0") == 1);
  CHECK(lines.size() == 3);
  CHECK(lost_trace_events(kTrace) == 2);
  CHECK(lost_trace_events("# entries-in-buffer/entries-written: 10/10   #P:2\n") == 0);
  CHECK(lost_trace_events("") == 0);
}

TEST_CASE("trace: profiler counts sum over CPUs and clones", "[trace]") {
  auto counts = count_calls({{"btrfs_remap_file_range", true},
                             {"btrfs_cont_expand", false},
                             {"init_once", false},
                             {"btrfs_no_such_function", true}},
                            profiler_capture());
  REQUIRE(counts.size() == 4);
  auto& remap = counts[0];
  CHECK(remap.function == "btrfs_remap_file_range");
  CHECK(remap.required);
  CHECK(remap.available);
  CHECK(remap.filtered);
  CHECK(remap.calls == 1000);  // 600 on CPU 0 + 400 on CPU 1
  CHECK(remap.method == kFunctionProfiler);
  CHECK(remap.note.empty());

  auto& expand = counts[1];
  CHECK(expand.calls == 5);
  CHECK(expand.symbols == std::vector<std::string>{"btrfs_cont_expand.constprop.0"});
  CHECK_FALSE(expand.filtered);  // not in the read-back filter

  auto& init = counts[2];
  CHECK(init.calls == 3);
  CHECK_THAT(init.note, Catch::Contains("2 functions are named init_once"));

  auto& missing = counts[3];
  CHECK_FALSE(missing.available);
  CHECK_FALSE(missing.filtered);
  CHECK(missing.calls == 0);
  CHECK_THAT(missing.note, Catch::Contains("not in available_filter_functions"));
}

TEST_CASE("trace: a cut name shared with any profiled function, not only a target, is said", "[trace]") {
  TraceCapture c;
  c.method = kFunctionProfiler;
  c.available_filter_functions = "btrfs_free_reserved_data_space_noquota\n";
  // A profiling pass profiles more than the targets: the read-back filter lists them.
  c.set_ftrace_filter = "btrfs_free_reserved_data_space_noquota\nbtrfs_free_reserved_data_space\n";
  c.profile_stats = {"  Function  Hit\n  btrfs_free_reserved_data_space   7\n"};
  auto counts = count_calls({{"btrfs_free_reserved_data_space_noquota", true}}, c);
  CHECK(counts[0].calls == 7);
  CHECK_THAT(counts[0].note, Catch::Contains("may include 1 other function starting with"));
}

TEST_CASE("trace: trace_stat's cut names are matched and the ambiguity is said", "[trace]") {
  auto counts = count_calls({{"btrfs_replace_file_extents_with_a_long_name", true}},
                            profiler_capture());
  REQUIRE(counts.size() == 1);
  CHECK(counts[0].calls == 17);
  CHECK_THAT(counts[0].note, Catch::Contains("cuts names at 30 characters"));
  CHECK_THAT(counts[0].note, Catch::Contains("1 other function"));
}

TEST_CASE("trace: tracer counts are by exact name and lost events make them a bound",
          "[trace]") {
  TraceCapture c;
  c.method = kFunctionTracer;
  c.available_filter_functions = kAvailable;
  c.set_ftrace_filter = "btrfs_remap_file_range\nbtrfs_clone_files\n";
  c.trace = kTrace;
  auto counts = count_calls({{"btrfs_remap_file_range", true}, {"btrfs_clone_files", false}}, c);
  CHECK(find(counts, "btrfs_remap_file_range").calls == 3);
  CHECK(find(counts, "btrfs_clone_files").calls == 1);
  CHECK_THAT(find(counts, "btrfs_clone_files").note, Catch::Contains("lost 2 events"));
  CHECK(find(counts, "btrfs_clone_files").method == kFunctionTracer);
}

TEST_CASE("trace: a kernel that cannot trace reports why for every function", "[trace]") {
  TraceCapture c;
  c.failure = "list traceable functions: read available_filter_functions: Operation not permitted";
  auto counts = count_calls({{"btrfs_remap_file_range", true}}, c);
  REQUIRE(counts.size() == 1);
  CHECK(counts[0].method == kNoTracing);
  CHECK_FALSE(counts[0].available);
  CHECK(counts[0].calls == 0);
  CHECK_THAT(counts[0].note, Catch::Contains("Operation not permitted"));
}

TEST_CASE("trace: counts round-trip through the bundle's direct_hit array", "[trace]") {
  auto counts = count_calls({{"btrfs_remap_file_range", true}, {"btrfs_cont_expand", false}},
                            profiler_capture());
  json j = to_json(counts);
  REQUIRE(j.is_array());
  REQUIRE(j.size() == 2);
  CHECK(j[0]["function"] == "btrfs_remap_file_range");
  CHECK(j[0]["calls"] == 1000);
  CHECK(j[0]["available"] == true);
  CHECK(j[0]["filtered"] == true);
  CHECK(j[0]["required"] == true);
  CHECK(j[0]["method"] == "function_profiler");
  CHECK_FALSE(j[0].contains("symbols"));  // just itself
  CHECK(j[1]["symbols"] == json{"btrfs_cont_expand.constprop.0"});
  auto back = counts_from_json(j);
  REQUIRE(back.size() == 2);
  CHECK(back[0].calls == 1000);
  CHECK(back[1].symbols == counts[1].symbols);
  CHECK(back[1].filtered == counts[1].filtered);
}

TEST_CASE("trace: direct-hit gates fail a required function that is missing or not hit",
          "[trace]") {
  std::vector<FunctionCount> counts(5);
  counts[0] = {"btrfs_remap_file_range", true, true, true, 1000, kFunctionProfiler, {}, ""};
  counts[1] = {"btrfs_foo", true, false, false, 0, kFunctionProfiler, {}, ""};
  counts[2] = {"btrfs_clone_files", true, true, true, 0, kFunctionTracer, {}, ""};
  counts[3] = {"btrfs_diagnostic", false, true, true, 0, kFunctionTracer, {}, ""};
  counts[4] = {"btrfs_bar", true, false, false, 0, kNoTracing, {}, "EPERM on current_tracer"};
  // Which are required is the experiment's word: counts[3]'s own "required" is ignored.
  auto gates = direct_hit_gates(3, to_json(counts),
                                {"btrfs_remap_file_range", "btrfs_foo", "btrfs_clone_files", "btrfs_bar"});
  REQUIRE(gates.size() == 4);  // diagnostic functions are recorded, not gated
  for (auto& g : gates) {
    CHECK(g.name == "direct_hit");
    CHECK(g.scope == "point 3");
  }
  CHECK(gates[0].passed);
  CHECK_THAT(gates[0].detail, Catch::Contains("called 1000 times"));
  CHECK_FALSE(gates[1].passed);
  CHECK(gates[1].detail ==
        "btrfs_foo is not a traceable function on this kernel: the patch cannot have been "
        "exercised as claimed");
  CHECK_FALSE(gates[2].passed);
  CHECK_THAT(gates[2].detail, Catch::Contains("the patch was not exercised"));
  CHECK_FALSE(gates[3].passed);
  CHECK_THAT(gates[3].detail, Catch::Contains("could not be counted (EPERM on current_tracer)"));

  CHECK(direct_hit_gates(0, json::array(), {}).empty());
  CHECK(direct_hit_gates(0, json(), {}).empty());
  // Thirty-ninth attack: a record's "required": false, or no record, hid an unexercised patch.
  auto unflagged = counts;
  for (auto& c : unflagged) c.required = false;
  CHECK(direct_hit_gates(3, to_json(unflagged), {"btrfs_clone_files"}).at(0).detail ==
        direct_hit_gates(3, to_json(counts), {"btrfs_clone_files"}).at(0).detail);
  CHECK_FALSE(direct_hit_gates(3, to_json(unflagged), {"btrfs_clone_files"}).at(0).passed);
  auto none = direct_hit_gates(3, json::array(), {"btrfs_remap_file_range"});
  REQUIRE(none.size() == 1);
  CHECK_FALSE(none[0].passed);
  CHECK_THAT(none[0].detail, Catch::Contains("no count of calls to btrfs_remap_file_range"));
}

// Function profiles, pure half: the guest's trace_stat texts and the pass's agent lines in,
// the point's profile entry out.
#include <catch2/catch.hpp>

#include <regex>

#include "trace/profile.hpp"

using namespace ks::trace;
using nlohmann::json;

namespace {

// trace_stat/function<cpu> with the graph tracer (kernel/trace/ftrace.c function_stat_show):
// total time in us with three decimals, whole us from seven digits on.
const char* kCpu0 =
    "  Function                               Hit    Time            Avg             s^2\n"
    "  --------                               ---    ----            ---             ---\n"
    "  btrfs_search_slot                     5000    17124.730 us     3.424 us        0.521 us    \n"
    "  btrfs_getxattr                        1000    998.000 us      0.998 us        0.010 us    \n"
    "  btrfs_replace_file_extents_wit          10    1234567 us      123456.7 us     0.000 us    \n";
const char* kCpu1 =
    "  Function                               Hit    Time            Avg             s^2\n"
    "  --------                               ---    ----            ---             ---\n"
    "  btrfs_getxattr                          20    2.500 us        0.125 us        0.000 us    \n";

std::string round_line(uint64_t ops, uint64_t elapsed_ns, bool warmup = false) {
  return json{{"type", "round"}, {"ops", ops}, {"elapsed_ns", elapsed_ns}, {"warmup", warmup}}.dump() + "\n";
}

}  // namespace

TEST_CASE("profile: calls and own time of every CPU summed, time read in ns") {
  auto f = parse_profile({kCpu0, kCpu1});
  REQUIRE(f.size() == 3);
  CHECK(f["btrfs_search_slot"].calls == 5000);
  CHECK(f["btrfs_search_slot"].own_ns == 17124730);
  CHECK(f["btrfs_getxattr"].calls == 1020);
  CHECK(f["btrfs_getxattr"].own_ns == 998000 + 2500);
  CHECK(f["btrfs_replace_file_extents_wit"].own_ns == 1234567000ULL);  // seven digits: whole us
}

TEST_CASE("profile: without the graph tracer there are calls and no time") {
  auto f = parse_profile({"  Function  Hit\n  --------  ---\n  btrfs_clone  1000\n"});
  REQUIRE(f.count("btrfs_clone"));
  CHECK(f["btrfs_clone"].calls == 1000);
  CHECK_FALSE(f["btrfs_clone"].own_ns);
}

TEST_CASE("profile entry: ops and time from the pass's measured rounds, functions largest first") {
  ProfileCapture c{"clone", 0, json{{"type", "start"}}.dump() + "\n" + round_line(7, 100, true) +
                                   round_line(1000, 108000000) + "not json\n",
                   {kCpu0, kCpu1}};
  auto e = profile_entry(c);
  CHECK(e["workload"] == "clone");
  CHECK(e["ops"] == 1000);  // the warm-up round's 7 are not the pass's ops
  CHECK(e["elapsed_ns"] == 108000000);
  CHECK(e["calls"] == 6030);
  REQUIRE(e["functions"].size() == 3);
  CHECK(e["functions"][0]["function"] == "btrfs_replace_file_extents_wit");
  CHECK(e["functions"][1]["function"] == "btrfs_search_slot");
  CHECK(e["functions"][2]["own_ns"] == 1000500);
  CHECK_FALSE(e.contains("left_out"));
}

TEST_CASE("profile entry: at most kProfileKeep functions, what is left out is counted") {
  std::string text = "  Function   Hit    Time   Avg   s^2\n";
  for (size_t i = 0; i < kProfileKeep + 5; ++i)
    text += "  f" + std::to_string(i) + "   1    " + std::to_string(i + 1) + ".000 us   1 us   0 us\n";
  auto e = profile_entry({"clone", 0, round_line(10, 1000), {text}});
  CHECK(e["functions"].size() == kProfileKeep);
  CHECK(e["calls"] == kProfileKeep + 5);  // every function's, kept or not
  CHECK(e["left_out"]["functions"] == 5);
  CHECK(e["left_out"]["max_own_ns"] == 5000);  // f4: the largest of those left out
}

TEST_CASE("profile entry: a failed agent, no ops or no counts say why instead of numbers") {
  CHECK(profile_entry({"clone", 1, round_line(10, 1000), {kCpu0}})["failure"] ==
        "the agent exited 1 in the profiling pass");
  CHECK(profile_entry({"clone", 0, "", {kCpu0}})["failure"] == "the profiling pass reported no ops");
  CHECK(profile_entry({"clone", 0, round_line(10, 1000), {"  Function  Hit\n"}})["failure"] ==
        "the function profiler counted no calls");
}

TEST_CASE("profile filter: globs a clone, a dedupe and a direct write pass through, as the guest matches them") {
  auto& f = profile_filter();
  for (const char* glob : {"btrfs_*", "*xattr*", "security_*", "iomap_*", "io_issue_sqe"})
    CHECK(std::find(f.begin(), f.end(), glob) != f.end());
  for (auto& glob : f) CHECK(glob.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_*") == std::string::npos);
  std::regex re(profile_regex({"xfs_extra"}), std::regex::extended);
  auto words = profile_words({"xfs_extra"});
  for (const char* name : {"btrfs_search_slot", "btrfs_clone_files.isra.0", "__vfs_getxattr", "io_issue_sqe",
                           "xfs_extra", "xfs_extra.constprop.0"}) {
    CHECK(std::regex_match(name, re));
    CHECK(std::any_of(words.begin(), words.end(), [&](auto& w) { return std::string(name).find(w) != std::string::npos; }));
  }
  CHECK_FALSE(std::regex_match("btrfs_x [btrfs]", re));  // a name only: the module is not part of it
  for (const char* name : {"io_issue_sqe_x", "xbtrfs_search_slot", "ext4_write", "xfs_extra_more"})
    CHECK_FALSE(std::regex_match(name, re));
}

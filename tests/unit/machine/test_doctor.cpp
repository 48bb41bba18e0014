// doctor's fixes: from a source tree they point at tools/setup.sh; installed (the data in
// <prefix>/share/ksandwich, no tools/ there) they are the apt-get line of the package.
#include <catch2/catch.hpp>
#include <map>

#include "machine/doctor.hpp"
#include "support/paths.hpp"
#include "support/temp_dir.hpp"
#include "util/files.hpp"

namespace fs = std::filesystem;

TEST_CASE("doctor: a source tree has tools/setup.sh, an installed data directory has not") {
  CHECK(ks::machine::is_source_tree(KS_SOURCE_DIR));
  ks::test::TempDir share("ks-share");  // as cmake --install lays out share/ksandwich
  for (auto dir : {"configs", "kernel-patches", "results-schema", "workloads/fio"}) fs::create_directories(share.path / dir);
  CHECK_FALSE(ks::machine::is_source_tree(share.path));
  CHECK_FALSE(ks::machine::is_source_tree(""));
}

TEST_CASE("doctor: installed, no fix says tools/setup.sh, each names its package") {
  auto installed = ks::machine::doctor_checks(false);
  std::map<std::string, std::string> fix;
  for (auto& c : installed) {
    INFO(c.name << ": " << c.fix);
    CHECK(c.fix.find("setup.sh") == std::string::npos);
    fix[c.name] = c.fix;
  }
  CHECK(fix.at("mkfs.btrfs") == "apt-get install btrfs-progs");
  CHECK(fix.at("QEMU") == "apt-get install qemu-system-x86");
  CHECK(fix.at("busybox (static)") == "apt-get install busybox-static");
  CHECK(fix.at("default kernel source") == "apt-get install linux-source-6.1");
  CHECK(fix.at("losetup") == "apt-get install mount");
  CHECK(fix.at("kernel build: gcc") == "apt-get install gcc");
}

TEST_CASE("doctor: from a source tree, the fix is tools/setup.sh, naming the package it installs") {
  for (auto& c : ks::machine::doctor_checks(true))
    if (c.name == "mkfs.btrfs") CHECK(c.fix == "run tools/setup.sh as root (it installs btrfs-progs)");
  CHECK(ks::machine::install_hint("fio", false) == "apt-get install fio");
}

TEST_CASE("doctor: the machine's load is ok below half its CPUs, and says what it read") {
  auto idle = ks::machine::load_check("0.15 0.20 0.10 1/180 4242\n", 2);
  CHECK(idle.ok);
  CHECK(idle.detail == "0.15 over the last minute on 2 CPUs");
  auto busy = ks::machine::load_check("1.00 0.50 0.20 3/180 4242\n", 2);
  CHECK_FALSE(busy.ok);
  CHECK(busy.fix.find("slows every point") != std::string::npos);
  CHECK_FALSE(busy.required);  // advice: the instruction clock does not see the load
  CHECK_FALSE(busy.main_job);
  for (auto text : {"", "x 1 2", "0.1x 1"}) {
    auto unreadable = ks::machine::load_check(text, 2);
    CHECK_FALSE(unreadable.ok);
    CHECK(unreadable.detail.find("cannot tell") == 0);
  }
  CHECK_FALSE(ks::machine::load_check("0.00 0 0", 0).ok);
}

TEST_CASE("doctor: the kernel cache needs 3 GiB free, and an unknown figure is not ok") {
  constexpr std::uintmax_t GiB = 1ull << 30;
  CHECK(ks::machine::cache_space_check("/var/cache/ksandwich", 47 * GiB).ok);
  CHECK(ks::machine::cache_space_check("/var/cache/ksandwich", 47 * GiB).detail == "47.0 GiB free for /var/cache/ksandwich");
  auto tight = ks::machine::cache_space_check("/c", 2 * GiB);
  CHECK_FALSE(tight.ok);
  CHECK(tight.fix.find("KSANDWICH_CACHE") != std::string::npos);
  CHECK_FALSE(ks::machine::cache_space_check("/c", std::nullopt).ok);
}

TEST_CASE("doctor: free space is read where a cache would be made, from its nearest existing parent") {
  ks::test::TempDir dir("ks-space");
  auto here = ks::machine::free_bytes(dir.path);
  REQUIRE(here.has_value());
  auto later = ks::machine::free_bytes(dir.path / "not/yet/made");
  REQUIRE(later.has_value());
  // The same filesystem: the two readings differ only by what was written in between.
  CHECK(*later <= *here + (64u << 20));
  CHECK(*later + (64u << 20) >= *here);
}

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

#include <catch2/catch.hpp>

#include "kernel/kbuild.hpp"
#include "kernel/kconfig.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

using namespace ks::kernel;

TEST_CASE("parse_fragment reads assignments and not-set lines with their origin", "[build][kconfig]") {
  auto lines = parse_fragment(
      "# a comment\n"
      "\n"
      "CONFIG_BTRFS_FS=y\n"
      "# CONFIG_SLOB is not set\n"
      "CONFIG_LOCALVERSION=\"-x\"\n"
      "CONFIG_NR_CPUS=4  \n",
      "bench.config");
  REQUIRE(lines.size() == 4);
  CHECK(lines[0].symbol == "BTRFS_FS");
  CHECK(lines[0].value == "y");
  CHECK(lines[0].origin == "bench.config:3");
  CHECK(lines[1].symbol == "SLOB");
  CHECK(lines[1].value == "n");
  CHECK(lines[2].value == "\"-x\"");
  CHECK(lines[3].value == "4");
  CHECK(lines[3].origin == "bench.config:6");
}

TEST_CASE("parse_fragment names the line it cannot read", "[build][kconfig]") {
  try {
    parse_fragment("CONFIG_A=y\nBTRFS_FS=y\n", "f.config");
    FAIL("no error");
  } catch (const ks::UserError& e) {
    CHECK(std::string(e.what()).find("f.config:2") != std::string::npos);
    CHECK(std::string(e.what()).find("BTRFS_FS=y") != std::string::npos);
  }
}

TEST_CASE("merge_config replaces base lines and lets later fragments win", "[build][kconfig]") {
  std::string base =
      "#\n# Linux/x86 6.1.192 Kernel Configuration\n#\n"
      "CONFIG_A=y\n"
      "# CONFIG_B is not set\n"
      "CONFIG_C=y\n";
  auto first = parse_fragment("CONFIG_B=y\n# CONFIG_A is not set\nCONFIG_D=m\n", "one");
  auto second = parse_fragment("CONFIG_D=y\n", "two");
  first.insert(first.end(), second.begin(), second.end());
  auto merged = merge_config(base, first);
  auto values = parse_config(merged);
  CHECK(values["A"] == "n");
  CHECK(values["B"] == "y");
  CHECK(values["C"] == "y");
  CHECK(values["D"] == "y");
  // one line per symbol: no "override: reassigning" noise from Kconfig
  CHECK(merged.find("CONFIG_A=y") == std::string::npos);
  CHECK(merged.find("# CONFIG_B is not set") == std::string::npos);
  CHECK(merged.find("CONFIG_D=m") == std::string::npos);
  CHECK(merged.find("Kernel Configuration") != std::string::npos);
}

TEST_CASE("verify_config reports what Kconfig dropped", "[build][kconfig]") {
  auto requested = parse_fragment(
      "CONFIG_TMPFS=y\n# CONFIG_SLOB is not set\nCONFIG_BTRFS_FS=y\nCONFIG_BRD=m\n"
      "CONFIG_STR=\"abc\"\n",
      "bench.config");
  ConfigValues normalized = {{"BTRFS_FS", "y"}, {"BRD", "y"}, {"STR", "\"abc\""}};

  auto mismatches = verify_config(requested, normalized);
  REQUIRE(mismatches.size() == 1);  // TMPFS; SLOB absent = n; BRD m -> y without modules
  CHECK(mismatches[0].requested.symbol == "TMPFS");
  CHECK(mismatches[0].actual == "n");
  CHECK(mismatches[0].requested.origin == "bench.config:1");

  normalized["MODULES"] = "y";  // with modules, y is not what "m" asked for
  normalized["TMPFS"] = "y";
  normalized["STR"] = "\"abd\"";
  mismatches = verify_config(requested, normalized);
  REQUIRE(mismatches.size() == 2);
  CHECK(mismatches[0].requested.symbol == "BRD");
  CHECK(mismatches[1].requested.symbol == "STR");
}

TEST_CASE("the last request for a symbol is the one verified", "[build][kconfig]") {
  auto requested = parse_fragment("CONFIG_X=y\n# CONFIG_X is not set\n", "f");
  CHECK(verify_config(requested, {}).empty());
  CHECK(verify_config(requested, {{"X", "y"}}).size() == 1);
  CHECK(format_assignment("X", "n") == "# CONFIG_X is not set");
  CHECK(format_assignment("X", "y") == "CONFIG_X=y");
}

TEST_CASE("a bare fragment name is the shipped fragment's, a path is the file's", "[build][kconfig]") {
  // Thirty-ninth attack: anyone's btrfs-bench.config in the current directory (a shared one)
  // stood in for `build`'s default fragment.
  const std::filesystem::path repo = KS_SOURCE_DIR;
  ks::test::TempDir tmp("ks-fragment");
  ks::write_file(tmp.path / "btrfs-bench.config", "CONFIG_SOMETHING_ELSE=y\n");
  ks::write_file(tmp.path / "mine.config", "CONFIG_BTRFS_FS=y\n");
  const auto before = std::filesystem::current_path();
  std::filesystem::current_path(tmp.path);
  const auto shipped = resolve_fragment("btrfs-bench.config", repo);
  const auto as_path = resolve_fragment("./btrfs-bench.config", repo);
  const auto own = resolve_fragment("mine.config", repo);
  std::filesystem::current_path(before);
  CHECK(shipped == repo / "configs/kernel/btrfs-bench.config");
  CHECK(as_path == "./btrfs-bench.config");
  CHECK(own == "mine.config");  // a name nothing ships is still the current directory's
}

// Knobs: confined to /sys and /proc/sys after resolving every symlink, restored byte for
// byte, and restored one by one, so a failure on the second knob restores the first.
#include <catch2/catch.hpp>
#include <filesystem>

#include "boot/knobs.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace fs = std::filesystem;
using ks::boot::KnobRules;
using ks::boot::KnobSetting;
using Knobs = std::map<std::string, std::string>;

namespace {
KnobRules rules_for(const fs::path& root) {
  KnobRules r;
  r.roots = {root};
  r.require_kernel_fs = false;  // a tmp directory stands in for /sys
  return r;
}
}  // namespace

TEST_CASE("knobs: old values come back byte for byte, trailing newline included") {
  ks::test::TempDir tmp("ks-knobs");
  ks::write_file(tmp.path / "a", "128\n");
  ks::write_file(tmp.path / "b", "[none] mq-deadline\n\n");
  {
    KnobSetting knobs(Knobs{{(tmp.path / "a").string(), "4096"}, {(tmp.path / "b").string(), "none"}},
                      rules_for(tmp.path));
    CHECK(ks::read_file(tmp.path / "a") == "4096");
    CHECK(knobs.applied()[(tmp.path / "a").string()] == "4096");
  }
  CHECK(ks::read_file(tmp.path / "a") == "128\n");
  CHECK(ks::read_file(tmp.path / "b") == "[none] mq-deadline\n\n");
}

TEST_CASE("knobs: when the second knob cannot be set, the first is already restored") {
  ks::test::TempDir tmp("ks-knobs");
  ks::write_file(tmp.path / "a", "1\n");
  fs::create_directory(tmp.path / "b");  // not a file: setting it fails
  CHECK_THROWS_AS(KnobSetting(Knobs{{(tmp.path / "a").string(), "0"}, {(tmp.path / "b").string(), "x"}},
                              rules_for(tmp.path)),
                  ks::UserError);
  CHECK(ks::read_file(tmp.path / "a") == "1\n");
}

TEST_CASE("knobs: a path that resolves outside the roots is refused and nothing is written") {
  ks::test::TempDir tmp("ks-knobs");
  fs::create_directory(tmp.path / "sys");
  ks::write_file(tmp.path / "outside.txt", "keep\n");
  fs::create_symlink(tmp.path / "outside.txt", tmp.path / "sys/link");
  fs::create_directory_symlink(tmp.path, tmp.path / "sys/up");
  auto rules = rules_for(tmp.path / "sys");
  for (auto path : {tmp.path / "sys/link", tmp.path / "sys/../outside.txt", tmp.path / "sys/up/outside.txt"}) {
    INFO(path);
    try {
      KnobSetting knobs(Knobs{{path.string(), "v"}}, rules);
      FAIL("accepted");
    } catch (const ks::UserError& e) {
      CHECK_THAT(e.what(), Catch::Contains("not under"));
      CHECK_FALSE(e.hint().empty());
    }
  }
  CHECK(ks::read_file(tmp.path / "outside.txt") == "keep\n");
}

TEST_CASE("knobs: with the real rules, /sys/.. and files off sysfs are refused") {
  ks::test::TempDir tmp("ks-knobs");
  ks::write_file(tmp.path / "knob.txt", "v0\n");
  auto escaped = "/sys/.." + (tmp.path / "knob.txt").string();
  CHECK_THROWS_AS(KnobSetting(Knobs{{escaped, "v"}}), ks::UserError);
  CHECK_THROWS_AS(KnobSetting(Knobs{{(tmp.path / "knob.txt").string(), "v"}}), ks::UserError);
  CHECK(ks::read_file(tmp.path / "knob.txt") == "v0\n");
  CHECK_THROWS_AS(KnobSetting(Knobs{{"/sys/no/such/knob", "v"}}), ks::UserError);
}

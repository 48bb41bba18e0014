#include <catch2/catch.hpp>

#include "storage/facts.hpp"
#include "util/error.hpp"

using namespace ks::storage;

TEST_CASE("storage: parse_devnum reads major:minor and rejects junk", "[storage]") {
  auto d = parse_devnum("254:16\n");
  REQUIRE(d);
  CHECK(d->major == 254);
  CHECK(d->minor == 16);
  CHECK(d->str() == "254:16");
  CHECK_FALSE(parse_devnum("254"));
  CHECK_FALSE(parse_devnum("a:b"));
  CHECK_FALSE(parse_devnum(":1"));
  CHECK_FALSE(parse_devnum("1:2x"));
}

TEST_CASE("storage: unescape_octal decodes the kernel's escapes only", "[storage]") {
  CHECK(unescape_octal("/mnt/my\\040disk") == "/mnt/my disk");
  CHECK(unescape_octal("a\\134b") == "a\\b");
  CHECK(unescape_octal("tab\\011") == "tab\t");
  CHECK(unescape_octal("trailing\\04") == "trailing\\04");  // too short: kept as is
  CHECK(unescape_octal("not\\089") == "not\\089");          // 8 and 9 are not octal
}

TEST_CASE("storage: parse_mountinfo handles optional fields, escapes and btrfs' 0:N", "[storage]") {
  const char* text =
      "26 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard\n"
      "24 23 0:22 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24683620k\n"
      "90 26 0:51 / /run/ksandwich/mnt\\040a rw,noatime shared:5 master:2 - btrfs /dev/loop3 "
      "rw,ssd,space_cache=v2,subvolid=5,subvol=/\n"
      "garbage line\n"
      "\n";
  auto m = parse_mountinfo(text);
  REQUIRE(m.size() == 3);
  CHECK(m[0].dev == DevNum{254, 0});
  CHECK(m[0].mount_point == "/");
  CHECK(m[0].fstype == "ext4");
  CHECK(m[0].source == "/dev/vda");
  CHECK(m[0].super_options == "rw,discard");
  CHECK(m[1].source == "tmpfs");
  CHECK(m[1].mount_options == "rw,relatime");
  CHECK(m[2].dev == DevNum{0, 51});
  CHECK(m[2].mount_point == "/run/ksandwich/mnt a");
  CHECK(m[2].mount_options == "rw,noatime");
  CHECK(m[2].fstype == "btrfs");
  CHECK(m[2].source == "/dev/loop3");
}

TEST_CASE("storage: parse_swaps lists the swap devices and files", "[storage]") {
  const char* text =
      "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
      "/dev/vdb2                               partition\t8388604\t\t0\t\t-2\n"
      "/swap\\040file                          file\t\t1048572\t\t0\t\t-3\n";
  CHECK(parse_swaps(text) == std::vector<std::string>{"/dev/vdb2", "/swap file"});
  CHECK(parse_swaps("Filename\tType\tSize\tUsed\tPriority\n").empty());
}

TEST_CASE("storage: parse_wipefs turns each signature into 'type at offset'", "[storage]") {
  CHECK(parse_wipefs("btrfs 0x10040\n") == std::vector<std::string>{"btrfs at 0x10040"});
  CHECK(parse_wipefs("dos   0x1fe\nxfs 0x0\n") ==
        std::vector<std::string>{"dos at 0x1fe", "xfs at 0x0"});
  CHECK(parse_wipefs("").empty());
  CHECK(parse_wipefs("\n  \n").empty());
}

namespace {
DeviceFacts free_device() {
  DeviceFacts f;
  f.path = "/dev/sdz";
  f.exists = true;
  f.is_block_device = true;
  return f;
}

std::string refusal(const DeviceFacts& f, bool allow_overwrite = false) {
  auto r = judge_device(f, allow_overwrite);
  REQUIRE(r);
  CHECK_FALSE(r->hint.empty());
  return r->what;
}
}  // namespace

TEST_CASE("storage: judge_device formats a named device only with allow_overwrite, signature or not",
          "[storage]") {
  // No signature is not "no data": random bytes have none.
  CHECK_THAT(refusal(free_device()), Catch::Contains("no filesystem or partition-table signature") &&
                                         Catch::Contains("allow_overwrite"));
  CHECK_FALSE(judge_device(free_device(), true));
}

TEST_CASE("storage: judge_device lets a run format again the btrfs it labelled itself", "[storage]") {
  auto f = free_device();
  f.signatures = {"btrfs at 0x10040"};
  f.btrfs_label = "ksandwich-0123456789abcdef";
  CHECK_FALSE(judge_device(f, false, "ksandwich-0123456789abcdef"));
  CHECK_THAT(refusal(f), Catch::Contains("btrfs label \"ksandwich-0123456789abcdef\""));
  CHECK(judge_device(f, false, "ksandwich-fedcba9876543210"));  // another run's
  f.signatures.push_back("dos at 0x1fe");                        // more than our btrfs
  CHECK(judge_device(f, false, "ksandwich-0123456789abcdef"));
  f.signatures = {"btrfs at 0x10040"};
  f.mounted_at = {"/mnt"};  // ours, but in use
  CHECK(judge_device(f, true, "ksandwich-0123456789abcdef"));
}

TEST_CASE("storage: btrfs_label_of_superblock reads the label only from a btrfs superblock", "[storage]") {
  std::string super(kBtrfsSuperSize, '\0');
  CHECK_FALSE(btrfs_label_of_superblock(super));
  super.replace(0x40, 8, "_BHRfS_M");
  CHECK(btrfs_label_of_superblock(super) == "");
  super.replace(0x12b, 9, "ksandwich");
  CHECK(btrfs_label_of_superblock(super) == "ksandwich");
  CHECK_FALSE(btrfs_label_of_superblock(super.substr(0, 0x100)));
}

TEST_CASE("storage: judge_device refuses each unsafe device and says why", "[storage]") {
  auto f = free_device();
  SECTION("missing") {
    f.exists = false;
    f.is_block_device = false;
    CHECK_THAT(refusal(f, true), Catch::Contains("does not exist"));
  }
  SECTION("not a block device") {
    f.is_block_device = false;
    CHECK_THAT(refusal(f, true), Catch::Contains("not a block device"));
  }
  SECTION("root device, even with allow_overwrite") {
    f.root_device = "/dev/sdz1";
    CHECK_THAT(refusal(f, true), Catch::Contains("root filesystem"));
  }
  SECTION("mounted") {
    f.mounted_at = {"/data", "/srv"};
    CHECK_THAT(refusal(f, true), Catch::Contains("mounted (on /data, /srv)"));
  }
  SECTION("swap") {
    f.swap = {"/dev/sdz2"};
    CHECK_THAT(refusal(f, true), Catch::Contains("swap"));
  }
  SECTION("held") {
    f.holders = {"/dev/dm-0"};
    CHECK_THAT(refusal(f, true), Catch::Contains("held by /dev/dm-0"));
  }
  SECTION("busy") {
    f.busy = {"/dev/sdz"};
    CHECK_THAT(refusal(f, true), Catch::Contains("cannot be opened exclusively"));
  }
  SECTION("signature") {
    f.signatures = {"btrfs at 0x10040"};
    CHECK_THAT(refusal(f), Catch::Contains("btrfs at 0x10040"));
    CHECK_FALSE(judge_device(f, true));
  }
  SECTION("probe failed") {
    f.probe_error = "wipefs exited 1";
    CHECK_THAT(refusal(f), Catch::Contains("cannot tell"));
    CHECK_FALSE(judge_device(f, true));
  }
}

TEST_CASE("storage: judge_device names the root device before a mount of it", "[storage]") {
  auto f = free_device();
  f.root_device = "/dev/sdz";
  f.mounted_at = {"/"};
  CHECK(refusal(f) == "storage device /dev/sdz holds the root filesystem /");
  f.root_device = "/dev/sdz3";
  CHECK(refusal(f) == "storage device /dev/sdz shares a disk with /dev/sdz3, which holds the root filesystem /");
}

TEST_CASE("storage: the signature hint names allow_overwrite", "[storage]") {
  auto f = free_device();
  f.signatures = {"dos at 0x1fe"};
  auto r = judge_device(f, false);
  REQUIRE(r);
  CHECK_THAT(r->hint, Catch::Contains("allow_overwrite"));
}

TEST_CASE("storage: resolve_kind prefers brd, then zram, then loop", "[storage]") {
  Availability all{.brd_loadable = true, .brd_present = false, .zram = true, .loop = true};
  CHECK(resolve_kind("auto", all) == "brd");
  CHECK(resolve_kind("auto", {.zram = true, .loop = true}) == "zram");
  CHECK(resolve_kind("auto", {.loop = true}) == "loop");
  // A ram disk someone else loaded has their size: auto does not take it.
  CHECK(resolve_kind("auto", {.brd_present = true, .loop = true}) == "loop");
  CHECK_THROWS_AS(resolve_kind("auto", Availability{}), ks::UserError);
}

TEST_CASE("storage: resolve_kind checks explicit kinds against the machine", "[storage]") {
  Availability here{.zram = true, .loop = true};  // this machine: no brd
  CHECK(resolve_kind("zram", here) == "zram");
  CHECK(resolve_kind("loop", here) == "loop");
  CHECK(resolve_kind("device", here) == "device");
  CHECK(resolve_kind("brd", {.brd_present = true}) == "brd");
  CHECK_THROWS_AS(resolve_kind("brd", here), ks::UserError);
  CHECK_THROWS_AS(resolve_kind("zram", {.loop = true}), ks::UserError);
  CHECK_THROWS_AS(resolve_kind("loop", {.zram = true}), ks::UserError);
  CHECK_THROWS_WITH(resolve_kind("nvme", here), Catch::Contains("unknown storage kind"));
}

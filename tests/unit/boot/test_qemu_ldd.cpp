// The initramfs takes a program's libraries from the dynamic loader's own listing (ldd).
#include <catch2/catch.hpp>

#include "boot/initramfs.hpp"
#include "util/error.hpp"

using ks::boot::parse_ldd;
namespace fs = std::filesystem;

TEST_CASE("ldd listing: libraries by path with the loader included and the vDSO left out") {
  auto libs = parse_ldd(
      "\tlinux-vdso.so.1 (0x00007ffd5a3f2000)\n"
      "\tlibuuid.so.1 => /lib/x86_64-linux-gnu/libuuid.so.1 (0x00007fca6d1d0000)\n"
      "\tlibblkid.so.1 => /lib/x86_64-linux-gnu/libblkid.so.1 (0x00007fca6d179000)\n"
      "\tlibceph-common.so.2 => /usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2 (0x00007fa852c00000)\n"
      "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007fca6cf69000)\n"
      "\t/lib64/ld-linux-x86-64.so.2 (0x00007fca6d270000)\n"
      "\tlibuuid.so.1 => /lib/x86_64-linux-gnu/libuuid.so.1 (0x00007fa85c8dc000)\n");
  CHECK(libs == std::vector<fs::path>{"/lib/x86_64-linux-gnu/libblkid.so.1",
                                      "/lib/x86_64-linux-gnu/libc.so.6",
                                      "/lib/x86_64-linux-gnu/libuuid.so.1",
                                      "/lib64/ld-linux-x86-64.so.2",
                                      "/usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2"});
}

TEST_CASE("ldd listing: an old-style vDSO line with an empty target is skipped") {
  CHECK(parse_ldd("\tlinux-vdso.so.1 =>  (0x00007fff)\n\tlibm.so.6 => /lib/libm.so.6 (0x1)\n") ==
        std::vector<fs::path>{"/lib/libm.so.6"});
}

TEST_CASE("ldd listing: a library the loader cannot find is an error naming it") {
  try {
    parse_ldd("\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x1)\n\tlibrados.so.2 => not found\n");
    FAIL("expected a UserError");
  } catch (const ks::UserError& e) {
    CHECK(std::string(e.what()).find("librados.so.2") != std::string::npos);
  }
}

TEST_CASE("ldd listing: a static program has no libraries") {
  CHECK(parse_ldd("\tstatically linked\n").empty());
  CHECK(parse_ldd("").empty());
}

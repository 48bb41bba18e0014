#include <catch2/catch.hpp>

#include "source/source.hpp"

using ks::source::kernel_version_from_makefile;

TEST_CASE("the kernel version comes from the top-level Makefile", "[source]") {
  CHECK(kernel_version_from_makefile("# SPDX-License-Identifier: GPL-2.0\nVERSION = 6\n"
                                     "PATCHLEVEL = 1\nSUBLEVEL = 192\nEXTRAVERSION =\n"
                                     "NAME = Curry Ramen\n") == "6.1.192");
  CHECK(kernel_version_from_makefile("VERSION = 6\nPATCHLEVEL = 10\nSUBLEVEL = 0\n"
                                     "EXTRAVERSION = -rc3\n") == "6.10.0-rc3");
  // Later assignments (e.g. in recipes) do not override the header.
  CHECK(kernel_version_from_makefile("VERSION = 5\nPATCHLEVEL = 4\nSUBLEVEL = 1\n"
                                     "EXTRAVERSION =\nfoo:\n\tVERSION = 9\n") == "5.4.1");
  CHECK(kernel_version_from_makefile("all:\n\techo hello\n").empty());
}

TEST_CASE("a source identity names itself by archive hash or commit", "[source]") {
  ks::source::SourceIdentity tarball{"tarball", "/x.tar.xz", "6.1.192", "abcd", "", ""};
  CHECK(tarball.key() == "abcd");
  ks::source::SourceIdentity git{"git", "/linux", "6.1.0", "", "0123abcd", ""};
  CHECK(git.key() == "0123abcd");
  auto round = ks::source::source_identity_from_json(ks::source::to_json(tarball));
  CHECK(round.origin == "/x.tar.xz");
  CHECK(round.version == "6.1.192");
  CHECK(round.archive_sha256 == "abcd");
}

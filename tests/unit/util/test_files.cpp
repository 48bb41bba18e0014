// Reading back what another program wrote without a limit: a guest flooding its console or
// results port costs the host no more than the bound.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "support/temp_dir.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"

TEST_CASE("read_head_and_tail: whole up to the bound, else its head and tail and what was left out") {
  ks::test::TempDir dir;
  auto file = dir.path / "console.log";
  CHECK(ks::read_head_and_tail(file, 100).empty());  // missing

  ks::write_file(file, std::string(100, 'a'));
  CHECK(ks::read_head_and_tail(file, 100) == std::string(100, 'a'));

  ks::write_file(file, std::string(60, 'h') + std::string(1000, 'x') + std::string(40, 't'));
  auto text = ks::read_head_and_tail(file, 100);
  CHECK(text == std::string(50, 'h') + "\n[ksandwich: 1000 bytes left out here]\n" + std::string(10, 'x') + std::string(40, 't'));

  // No link is followed, and a FIFO (which would wait for a writer) is not read.
  std::filesystem::create_symlink(file, dir.path / "link");
  CHECK(ks::read_head_and_tail(dir.path / "link", 100).empty());
  REQUIRE(::mkfifo((dir.path / "fifo").c_str(), 0600) == 0);
  CHECK(ks::read_head_and_tail(dir.path / "fifo", 100).empty());
}

TEST_CASE("sha256_file: a FIFO or a device in a file's place is refused at once, never waited on or read forever") {
  ks::test::TempDir dir;
  REQUIRE(::mkfifo((dir.path / "bzImage").c_str(), 0644) == 0);
  CHECK_THROWS_WITH(ks::sha256_file(dir.path / "bzImage"), Catch::Contains("not a regular file"));
  CHECK_THROWS_WITH(ks::sha256_file("/dev/zero"), Catch::Contains("not a regular file"));
  CHECK_THROWS_AS(ks::sha256_file(dir.path / "missing"), ks::SystemError);
  ks::write_file(dir.path / "f", "abc");
  CHECK(ks::sha256_file(dir.path / "f") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("write_file_append: appends to a regular file (made when missing) and never to a link or FIFO or device") {
  ks::test::TempDir dir;
  auto file = dir.path / "summary.md";
  ks::write_file_append(file, "one\n");
  ks::write_file_append(file, "two\n");
  CHECK(ks::read_file(file) == "one\ntwo\n");
  struct stat st{};
  REQUIRE(::stat(file.c_str(), &st) == 0);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  CHECK((st.st_mode & 0777) == (0644 & ~mask));

  auto victim = dir.path / "victim";
  ks::write_file(victim, "kept\n");
  std::filesystem::create_symlink(victim, dir.path / "link");
  CHECK_THROWS_AS(ks::write_file_append(dir.path / "link", "planted\n"), ks::SystemError);
  CHECK(ks::read_file(victim) == "kept\n");
  REQUIRE(::mkfifo((dir.path / "fifo").c_str(), 0600) == 0);  // no reader: an open that waited would hang here
  CHECK_THROWS_AS(ks::write_file_append(dir.path / "fifo", "x\n"), ks::SystemError);
  CHECK_THROWS_WITH(ks::write_file_append("/dev/null", "x\n"), Catch::Contains("not a regular file"));
}

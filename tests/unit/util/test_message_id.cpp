#include <catch2/catch.hpp>

#include "util/message_id.hpp"

TEST_CASE("message ids: the forms a user copies become the bare id, anything else nothing") {
  using ks::bare_message_id;
  CHECK(bare_message_id("<a.b@host>") == "a.b@host");
  CHECK(bare_message_id("  a.b@host ") == "a.b@host");
  CHECK(bare_message_id("id:a.b@host") == "a.b@host");
  CHECK(bare_message_id("https://lore.kernel.org/linux-btrfs/a.b@host/T/#u") == "a.b@host");
  CHECK(bare_message_id("https://lore.kernel.org/r/%3Ca.b%40host%3E") == "a.b@host");
  CHECK(bare_message_id("https://patch.msgid.link/a.b@host") == "a.b@host");
  for (auto bad : {"", "no-at-sign", "a b@host", "a@host\nBcc: x@y", "<a@b\r>", "https://lore.kernel.org/linux-btrfs/"}) {
    INFO(bad);
    CHECK(bare_message_id(bad).empty());
  }
  CHECK(bare_message_id(std::string(1000, 'a') + "@x").empty());
  CHECK(ks::message_ids("<a@x> <b@x>\n <c@x> <") == std::vector<std::string>{"a@x", "b@x", "c@x"});
}

#pragma once
// Message-IDs as mail and users write them. Pure.
#include <string>
#include <string_view>
#include <vector>

namespace ks {

// The ids ("<...>") a header value names (Message-ID, In-Reply-To, References), brackets
// dropped, in order. A scan: a References header may hold hundreds.
std::vector<std::string> message_ids(std::string_view value);

// The Message-ID a user or a mail gave, without its angle brackets: "<id@host>", "id@host",
// "id:id@host", or a link whose path holds it (https://lore.kernel.org/LIST/id@host/T/#u,
// https://lore.kernel.org/r/id@host, https://patch.msgid.link/id@host, %-escaped or not).
// Empty when it is none: one word of printable ASCII with an '@', at most 900 bytes, is what
// can go into an In-Reply-To: header.
std::string bare_message_id(std::string_view given);

}  // namespace ks

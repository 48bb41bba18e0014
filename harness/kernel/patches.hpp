#pragma once
// Patch files as values. A patch file is either a plain diff (`diff -u`, `git diff`) or a
// mailbox: one message (`git format-patch`) or a series / thread saved from a list archive
// (lore's t.mbox.gz, gunzipped). A mailbox is applied like `git am`: each message that
// carries a diff is one patch, in series order, with its subject, author, date and
// Message-ID recorded. Pure.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks::kernel {

struct Patch {
  std::string file;         // the patch file as named by the user
  std::string file_sha256;  // SHA-256 of that whole file (what `sha256sum FILE` prints)
  int index = 1;            // position in the file (1-based) and number of patches in it
  int count = 1;
  int position = 0;         // k and N of the subject's "[PATCH k/N]"; 0 where it has none
  int total = 0;
  std::string subject;      // as in the mail, e.g. "[PATCH v2 1/2] btrfs: ..."
  std::string author;       // From:
  std::string date;         // Date:
  std::string message_id;   // "<...@...>", empty for a plain diff or a format-patch file
  std::string to, cc;       // To: and Cc: as the mail had them (decoded, one line): whom a reply goes to
  std::string text;         // exactly what is fed to `patch -p1` (decoded message body)
  std::string sha256;       // SHA-256 of `text`
  std::vector<std::string> files;  // paths the diff touches (see touched_files)
};

// A message of a series that carries no diff, e.g. "[PATCH 0/2]".
struct CoverLetter {
  std::string subject, author, date, message_id;
};

struct PatchSet {
  std::vector<Patch> patches;
  std::optional<CoverLetter> cover;
};

// True when TEXT is a mailbox (starts with an mbox "From " line or with mail headers).
bool is_mailbox(std::string_view text);

// The size of a patch file or mailbox: a mail is parsed line by line, a few copies of each
// (about 12 bytes of memory for each byte, plus 120 for each line), so 64 MiB of empty lines
// would cost minutes and gigabytes. The largest kernel patch series run to a few megabytes
// and a few hundred thousand lines.
inline constexpr size_t kMaxPatchBytes = size_t(16) << 20;
inline constexpr size_t kMaxPatchLines = 1'000'000;

// Splits FILE's TEXT into patches. Throws UserError when it holds no diff at all, or more
// than kMaxPatchBytes or kMaxPatchLines lines (as does select_series).
PatchSet parse_patch_file(std::string_view text, const std::string& file);

// One series out of a saved thread (lore's t.mbox.gz, gunzipped): the messages of the series
// that MESSAGE_ID belongs to, as a mailbox of their own, in the order the thread had them;
// the version that message belongs to (what `b4 am -v N` gives; plain `b4 am` takes the
// newest). MESSAGE_ID names the cover letter or any patch of the series, in any form
// bare_message_id (util/message_id.hpp) reads. The series is found by threading (In-Reply-To, else References),
// not by subject: from that message up through the patches of the same version, count and
// RESEND-ness to the first (the cover, or patch 1 without one), then every message threaded
// below it of that version and count. Replies ("Re:"), other versions and, below a patch
// without numbering, other patches are left out. Throws UserError when no message has that id
// (matched exactly, else ignoring case when that is unique), when it is a reply, or when the
// thread lacks patches of the series or holds one twice.
std::string select_series(std::string_view mbox_text, std::string_view message_id, const std::string& file);

// Paths a diff touches, both sides of each file header, -p1 stripped
// ("+++ b/fs/btrfs/super.c" -> "fs/btrfs/super.c"; a rename names both paths).
std::vector<std::string> touched_files(std::string_view diff);

// Decodes RFC 2047 encoded words ("=?UTF-8?q?Ren=C3=A9?=") in a header value, into UTF-8:
// a declared charset converted with iconv, undeclared 8-bit bytes read as ISO-8859-1. The
// result is always valid UTF-8 (it goes into bundles and experiments as JSON).
std::string decode_header_words(std::string_view value);

// What `patch` printed when a dry run failed, as one clear sentence naming the file and
// the hunk: "hunk #1 of fs/btrfs/super.c FAILED at 1817" / "fs/foo.c does not exist".
std::string describe_patch_failure(std::string_view patch_output);

nlohmann::json to_json(const Patch& p);
nlohmann::json to_json(const CoverLetter& c);

}  // namespace ks::kernel

#pragma once
// Views of a bundle: plain text for a mailing-list reply, markdown for issue trackers,
// one self-contained HTML file (inline SVG, no network). Pure: bundle in, text out.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "evidence/bundle.hpp"

namespace ks::report {

// The compressed bundle a reply names, so a reader can check what they were sent.
struct Attachment {
  std::string name;    // "bundle.json.gz"
  uint64_t bytes = 0;
  std::string sha256;  // hex, of the file as attached
  std::string content; // the file's bytes, for mail(); may be left empty elsewhere
};

struct Options {
  // "Name <email>" of who ran it. The reply block carries Tested-by: when the verdict is
  // NO_CHANGE or IMPROVEMENT and Reported-by: for a REGRESSION; nothing otherwise.
  std::string tester;
  // Message-ID of the thread to answer ("<id@host>" or "id@host"). Empty: the Message-ID
  // the bundle recorded for the patched arm's (first) patch, when it came from a mailbox.
  std::string in_reply_to;
  // The reply's From: (default: tester), To: (default: the patch's author) and Cc:
  // (default: everyone the patch mail went to, the list among them).
  std::string from;
  std::vector<std::string> to, cc;
  std::optional<Attachment> attachment;
  // Why there is no reply to send, said where it would be (the bundle's figures do not follow
  // from its rows, the run has not finished); empty: the reply is shown.
  std::string no_reply;
};

std::string text(const evidence::Bundle& bundle, const Options& options = {});
std::string markdown(const evidence::Bundle& bundle, const Options& options = {});
std::string html(const evidence::Bundle& bundle, const Options& options = {});

// The report model (what the three views above render) as JSON, for scripts and CI.
std::string json(const evidence::Bundle& bundle, const Options& options = {});

// A bare address (local@domain, dot-atom characters only, not starting with '-') trimmed of
// spaces, or "" when it is not one: what a reply's To: and Cc: take, so that no value can add
// a recipient or a header of its own.
std::string clean_address(std::string address);
// The clean address of a mailbox, "Name <a@b>" or "a@b"; "" when there is none or something
// follows the '>'.
std::string mailbox_address(const std::string& mailbox);

// The reply as a MIME mail (RFC 5322/2045): From/To/Cc/Subject/In-Reply-To/References, the
// text part, and options.attachment's content as a base64 part when it has any; what
// `sendmail -t`, `msmtp -t` and `mutt -H` take. Nothing when the run answers no thread (no
// Message-ID in the patch, no in_reply_to).
std::optional<std::string> mail(const evidence::Bundle& bundle, const Options& options = {});

// "text" | "markdown" | "html" | "json" | "eml" (mail()); throws UserError for another name.
std::string render(const evidence::Bundle& bundle, const std::string& format,
                   const Options& options = {});

}  // namespace ks::report

// The reply as a MIME mail: the report model's reply (reply.cpp) with the headers a mailer
// needs and the bundle as a base64 attachment. Headers are ASCII (non-ASCII words as RFC
// 2047 encoded words), folded within 78 columns; the text part is UTF-8, 8bit, or
// quoted-printable when a line is too long to mail as it is. Date: and Message-ID: are the
// mailer's to add when it sends (sendmail, msmtp and mutt do), and so is From: when none was
// given.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "report/document.hpp"
#include "util/hash.hpp"

namespace ks::report {
namespace {

constexpr size_t kHeaderWidth = 78;

bool ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return c >= ' ' && c < 0x7f; });
}

// "=?UTF-8?B?...?=" words of 64 characters at most (a header line of 78 holds one after any
// field name here), each of whole UTF-8 characters where the text is valid UTF-8.
std::vector<std::string> encoded_words(std::string_view text) {
  std::vector<std::string> words;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = std::min(text.size(), start + 39);  // 39 bytes -> 52 base64 characters
    while (end > start + 1 && end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    words.push_back("=?UTF-8?B?" + base64(text.substr(start, end - start)) + "?=");
    start = end;
  }
  return words;
}

// NAME: VALUE folded at spaces (continuation lines start with a space).
std::string header(const std::string& name, const std::vector<std::string>& words) {
  std::string out = name + ":", line = out;
  for (auto& word : words) {
    if (line.size() + 1 + word.size() > kHeaderWidth && line.size() > name.size() + 1) {
      out += "\n";
      line.clear();
    }
    out += " " + word;
    line += " " + word;
  }
  return out + "\n";
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) words.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return words;
}

// Unstructured text (Subject): as it is when ASCII, else encoded words.
std::vector<std::string> text_words(const std::string& text) {
  return ascii(text) ? split_words(text) : encoded_words(text);
}

// "Name <a@b>" or "a@b" as header words: the name encoded when it is not ASCII, quoted when
// it holds a character that means something in an address ("Doe, Jane"). Nothing when the
// address is not a clean one or something follows it (the mailer then puts its own From:).
std::vector<std::string> mailbox_words(const std::string& mailbox) {
  if (mailbox_address(mailbox).empty()) return {};
  const auto lt = mailbox.rfind('<');
  if (lt == std::string::npos) return split_words(mailbox);
  std::string name = mailbox.substr(0, lt);
  while (!name.empty() && name.back() == ' ') name.pop_back();
  std::vector<std::string> words;
  if (!ascii(name)) {
    words = encoded_words(name);
  } else if (name.find_first_of("()<>[]:;@\\,.\"") != std::string::npos) {
    std::string quoted = "\"";
    for (char c : name) quoted += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
    words.push_back(quoted + "\"");
  } else {
    words = split_words(name);
  }
  words.push_back(mailbox.substr(lt));
  return words;
}

// TEXT as quoted-printable (RFC 2045, 6.7): what is not printable ASCII, '=', and a space or
// tab ending a line as =XX; lines of at most 76 characters, longer ones broken by a soft
// line break ("=" at its end) that the reader's mailer joins again.
std::string quoted_printable(std::string_view text) {
  constexpr size_t kWidth = 76;
  std::string out, line;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += line + "\n";
      line.clear();
      continue;
    }
    const bool ends_line = i + 1 == text.size() || text[i + 1] == '\n';
    const bool plain = (c >= ' ' && c < 0x7f && c != '=' && !(c == ' ' && ends_line)) || (c == '\t' && !ends_line);
    const std::string piece = plain ? std::string(1, static_cast<char>(c)) : fmt::format("={:02X}", c);
    // Room is kept for the '=' of a soft break, except on what ends a line.
    if (line.size() + piece.size() > kWidth - (ends_line ? 0 : 1)) {
      out += line + "=\n";
      line.clear();
    }
    line += piece;
  }
  return out + line;
}

// Whether every line of TEXT fits a mail sent as it is (RFC 5322: 998 octets at most).
bool lines_fit(std::string_view text) {
  for (size_t start = 0; start < text.size();) {
    const auto end = std::min(text.find('\n', start), text.size());
    if (end - start > 998) return false;
    start = end + 1;
  }
  return true;
}

std::string wrapped_base64(std::string_view data) {
  const std::string all = base64(data);
  std::string out;
  for (size_t i = 0; i < all.size(); i += 76) out += all.substr(i, 76) + "\n";
  return out;
}

}  // namespace

std::string clean_address(std::string a) {
  auto from = a.find_first_not_of(' '), to = a.find_last_not_of(' ');
  a = from == std::string::npos ? std::string() : a.substr(from, to - from + 1);  // one cut: no erase per space
  const auto at = a.find('@');
  // Never a leading '-': pasted after a mailer's name it would be read as an option.
  const bool clean = at != std::string::npos && at > 0 && a.front() != '-' && at + 1 < a.size() && a.find('@', at + 1) == std::string::npos &&
                     a.size() <= 254 && std::all_of(a.begin(), a.end(), [](unsigned char c) {
                       return std::isalnum(c) || std::string_view("!#$%&'*+-/=?^_`{|}~.@").find(static_cast<char>(c)) !=
                                                     std::string_view::npos;
                     });
  return clean ? a : "";
}

std::string mailbox_address(const std::string& mailbox) {
  const auto lt = mailbox.rfind('<');
  if (lt == std::string::npos) return clean_address(mailbox);
  if (mailbox.back() != '>') return "";
  return clean_address(mailbox.substr(lt + 1, mailbox.size() - lt - 2));
}

std::optional<std::string> mail(const evidence::Bundle& bundle, const Options& options) {
  const auto doc = detail::build_document(bundle, options);
  if (!doc.reply) return std::nullopt;
  const auto& r = *doc.reply;
  std::string out;
  if (auto from = mailbox_words(r.from); !from.empty()) out += header("From", from);
  auto list = [](std::vector<std::string> addresses) {
    for (size_t i = 0; i + 1 < addresses.size(); ++i) addresses[i] += ",";
    return addresses;
  };
  if (!r.to.empty()) out += header("To", list(r.to));
  if (!r.cc.empty()) out += header("Cc", list(r.cc));
  if (!r.subject.empty()) out += header("Subject", text_words(r.subject));
  out += "In-Reply-To: <" + r.in_reply_to + ">\nReferences: <" + r.in_reply_to + ">\n";
  out += "MIME-Version: 1.0\n";
  // As it is, unless a line is too long for a mail (a mailer, git send-email among them,
  // refuses it): then quoted-printable, which breaks it where the reader's mailer joins it.
  const bool plain = lines_fit(r.body);
  const std::string body = plain ? r.body : quoted_printable(r.body);
  const std::string text_part = std::string("Content-Type: text/plain; charset=UTF-8\nContent-Transfer-Encoding: ") +
                                (plain ? "8bit" : "quoted-printable") + "\n\n";
  const bool attach = options.attachment && !options.attachment->content.empty();
  if (!attach) return out + text_part + body;
  // A boundary the body cannot hold ('=' followed by '_' is never base64 and a text is
  // unlikely to have it; checked all the same).
  std::string boundary = "=_ksandwich_" + options.attachment->sha256.substr(0, 16);
  while (body.find(boundary) != std::string::npos) boundary += "_";
  const auto& a = *options.attachment;
  // The file name goes into a quoted parameter: only plain names, else the usual one.
  const bool plain_name = !a.name.empty() && a.name.size() <= 64 && std::all_of(a.name.begin(), a.name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
  });
  const std::string name = plain_name ? a.name : "bundle.json.gz";
  out += "Content-Type: multipart/mixed; boundary=\"" + boundary + "\"\n\n";
  out += "--" + boundary + "\n" + text_part + body;
  if (!body.empty() && body.back() != '\n') out += "\n";
  out += "--" + boundary + "\n";
  out += "Content-Type: application/gzip; name=\"" + name + "\"\n";
  out += "Content-Disposition: attachment; filename=\"" + name + "\"\n";
  out += "Content-Transfer-Encoding: base64\n\n" + wrapped_base64(a.content);
  out += "--" + boundary + "--\n";
  return out;
}

}  // namespace ks::report

#include "kernel/patches.hpp"

#include <algorithm>
#include <iconv.h>

#include <cctype>
#include <charconv>
#include <map>
#include <set>

#include "util/error.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"
#include "util/message_id.hpp"

namespace ks::kernel {
namespace {

std::string strip_cr(std::string s) {
  if (!s.empty() && s.back() == '\r') s.pop_back();
  return s;
}

// "Subject: text" -> {"subject", "text"}; nullopt when the line is not a header field.
std::optional<std::pair<std::string, std::string>> header_field(const std::string& line) {
  auto colon = line.find(':');
  if (colon == std::string::npos || colon == 0) return std::nullopt;
  for (size_t i = 0; i < colon; ++i) {
    char c = line[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) return std::nullopt;
  }
  return std::pair{lower(line.substr(0, colon)), trim(std::string_view(line).substr(colon + 1))};
}

bool is_header_line(const std::string& line) { return header_field(strip_cr(line)).has_value(); }

bool has_diff(std::string_view body) {
  auto lines = split(body, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    if (starts_with(lines[i], "diff --git ")) return true;
    if (starts_with(lines[i], "--- ") && i + 1 < lines.size() && starts_with(lines[i + 1], "+++ "))
      return true;
  }
  return false;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string decode_quoted_printable(std::string_view in, bool header) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (header && c == '_') {
      out += ' ';
    } else if (c == '=' && i + 1 < in.size() && in[i + 1] == '\n') {
      ++i;  // soft line break
    } else if (c == '=' && i + 2 < in.size() && in[i + 1] == '\r' && in[i + 2] == '\n') {
      i += 2;
    } else if (c == '=' && i + 2 < in.size() && hex_value(in[i + 1]) >= 0 &&
               hex_value(in[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(in[i + 1]) * 16 + hex_value(in[i + 2]));
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string decode_base64(std::string_view in) {
  static const std::string alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int bits = 0, value = 0;
  for (char c : in) {
    auto pos = alphabet.find(c);
    if (pos == std::string::npos) continue;  // whitespace, '=' padding
    value = (value << 6) | static_cast<int>(pos);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((value >> bits) & 0xff);
    }
  }
  return out;
}

struct Message {
  std::map<std::string, std::string> headers;  // lower-case name -> unfolded value (first)
  std::string body;
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

// Headers (unfolded) and the raw body of one message.
Message parse_message(const std::vector<std::string>& lines) {
  Message m;
  size_t i = 0;
  std::string last;
  for (; i < lines.size(); ++i) {
    auto line = strip_cr(lines[i]);
    if (line.empty()) {
      ++i;
      break;
    }
    if ((line[0] == ' ' || line[0] == '\t') && !last.empty()) {
      m.headers[last] += " " + trim(line);
      continue;
    }
    if (auto field = header_field(line)) {
      last = field->first;
      if (!m.headers.count(last)) m.headers[last] = field->second;
      else last.clear();  // keep the first occurrence, ignore the repeat's continuation
    }
  }
  std::vector<std::string> body(lines.begin() + static_cast<long>(std::min(i, lines.size())),
                                lines.end());
  m.body = join(body, "\n");
  return m;
}

// The value of parameter NAME (lower case) in a header value such as
// `multipart/mixed; boundary="abc"`: quoted or a bare token. Scanned, not matched with a
// regular expression (a value may be any length).
std::string parameter(const std::string& header_value, const std::string& name) {
  const std::string v = lower(header_value);
  auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  for (size_t at = v.find(name); at != std::string::npos; at = v.find(name, at + 1)) {
    size_t i = at + name.size();
    while (i < v.size() && space(v[i])) ++i;
    if (i >= v.size() || v[i] != '=') continue;
    ++i;
    while (i < v.size() && space(v[i])) ++i;
    if (i < v.size() && v[i] == '"') {
      auto end = header_value.find('"', i + 1);
      if (end != std::string::npos) return header_value.substr(i + 1, end - i - 1);
      continue;
    }
    size_t end = i;
    while (end < v.size() && v[end] != ';' && !space(v[end])) ++end;
    if (end > i) return header_value.substr(i, end - i);
  }
  return {};
}

std::string decode_body(const std::string& body, const std::string& encoding) {
  auto e = lower(encoding);
  if (e == "quoted-printable") return decode_quoted_printable(body, false);
  if (e == "base64") return decode_base64(body);
  return body;
}

// The decoded text part that carries the diff (or the whole body for a single part). A mail
// nests its parts a level or two (multipart/signed around multipart/mixed); parts nested
// deeper than kMaxMimeDepth are not looked into (each level copies its parts: eight levels
// of a 16 MB part took 730 MB, 4,000 levels gigabytes).
constexpr int kMaxMimeDepth = 3;
constexpr size_t kMaxBoundary = 70;
std::string message_text(const Message& m, int depth = 0) {
  auto type = m.header("content-type");
  if (lower(type).find("multipart/") == std::string::npos)
    return decode_body(m.body, m.header("content-transfer-encoding"));
  // RFC 2046 allows 1 to 70 characters; a longer one is no boundary (each body line would be
  // compared with it: a megabyte of boundary over a million lines is hours).
  const auto boundary = parameter(type, "boundary");
  if (boundary.empty() || boundary.size() > kMaxBoundary) return m.body;
  const std::string delimiter = "--" + boundary, close_delimiter = delimiter + "--";
  std::string fallback;
  // Parts sit between "--boundary" lines.
  auto lines = split(m.body, '\n');
  std::vector<std::string> part;
  bool inside = false;
  auto finish = [&]() -> std::optional<std::string> {
    if (!inside || part.empty()) return std::nullopt;
    Message p = parse_message(part);
    if (lower(p.header("content-type")).find("multipart/") != std::string::npos) {
      if (depth + 1 >= kMaxMimeDepth) return std::nullopt;
      auto nested = message_text(p, depth + 1);
      return has_diff(nested) ? std::optional(nested) : std::nullopt;
    }
    auto text = decode_body(p.body, p.header("content-transfer-encoding"));
    if (fallback.empty()) fallback = text;
    return has_diff(text) ? std::optional(text) : std::nullopt;
  };
  for (auto& raw : lines) {
    auto line = strip_cr(raw);
    if (line == delimiter || line == close_delimiter) {
      if (auto found = finish()) return *found;
      part.clear();
      inside = line == delimiter;
      continue;
    }
    if (inside) part.push_back(line);
  }
  if (auto found = finish()) return *found;
  return fallback;
}

// mboxrd escapes body lines that start with "From " as ">From "; undo one level. Nothing else
// changes (a body read back from a file series wrote is the body it wrote).
std::string unescape_from(const std::string& body) {
  auto lines = split(body, '\n');
  for (auto& line : lines) {
    auto quotes = line.find_first_not_of('>');
    if (quotes != std::string::npos && quotes > 0 && line.compare(quotes, 5, "From ") == 0) line.erase(0, 1);
  }
  return join(lines, "\n");
}

// The messages of a mailbox, each as its lines (without the "From " separator).
std::vector<std::vector<std::string>> split_mailbox(std::string_view text) {
  auto lines = split(text, '\n');
  std::vector<std::vector<std::string>> messages;
  std::vector<std::string> current;
  bool started = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    // A body line "From ..." is escaped in mboxrd; requiring a header on the next line
    // keeps an unescaped "From the ..." sentence (mboxo) from splitting a message.
    bool separator = starts_with(lines[i], "From ") && i + 1 < lines.size() &&
                     is_header_line(lines[i + 1]);
    if (separator) {
      if (started && !current.empty()) messages.push_back(std::move(current));
      current.clear();
      started = true;
      continue;
    }
    current.push_back(lines[i]);
  }
  if (!current.empty()) messages.push_back(std::move(current));
  return messages;
}

// "[PATCH v2 3/7] btrfs: foo" -> {3, 7}; {0, 0} without numbering, or with numbers no
// series has (they do not fit an int). A scan, not a regular expression: a subject is
// mail text, and it may be a '[' and 200,000 characters.
std::pair<int, int> series_position(const std::string& subject) {
  std::string_view s = subject;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  auto close = s.find(']');
  if (s.empty() || s.front() != '[' || close == std::string_view::npos) return {0, 0};
  auto inner = s.substr(1, close - 1);
  while (!inner.empty() && std::isspace(static_cast<unsigned char>(inner.back()))) inner.remove_suffix(1);
  auto digits_before = [&](size_t end) {  // start of the run of digits ending at END
    while (end > 0 && std::isdigit(static_cast<unsigned char>(inner[end - 1]))) --end;
    return end;
  };
  size_t total_start = digits_before(inner.size());
  if (total_start == inner.size() || total_start == 0 || inner[total_start - 1] != '/') return {0, 0};
  size_t slash = total_start - 1, index_start = digits_before(slash);
  if (index_start == slash) return {0, 0};
  if (index_start > 0 && (std::isalnum(static_cast<unsigned char>(inner[index_start - 1])) ||
                          inner[index_start - 1] == '_' || inner[index_start - 1] == '-'))
    return {0, 0};  // "v2/3" and "-1/2" are no position: the number must start a word
  int index = 0, total = 0;
  auto a = std::from_chars(inner.data() + index_start, inner.data() + slash, index);
  auto b = std::from_chars(inner.data() + total_start, inner.data() + inner.size(), total);
  if (a.ec != std::errc() || b.ec != std::errc()) return {0, 0};
  return {index, total};
}

// The words in a subject's leading brackets: "[PATCH v3 2/5] x" -> {"PATCH", "v3", "2/5"}.
std::vector<std::string> bracket_words(const std::string& subject) {
  auto s = trim(subject);
  auto close = s.find(']');
  if (!starts_with(s, "[") || close == std::string::npos) return {};
  std::vector<std::string> words;
  for (auto& word : split(s.substr(1, close - 1), ' '))
    if (!word.empty()) words.push_back(word);
  return words;
}

// "[PATCH v3 2/5] x" -> 3, as are "[PATCHv3]", "[RFC v3]" and "[PATCH v3.1]"; 1 when the
// brackets name no version.
int series_version(const std::string& subject) {
  for (auto& word : bracket_words(subject))
    for (size_t i = 0; i + 1 < word.size(); ++i) {
      if ((word[i] != 'v' && word[i] != 'V') || (i > 0 && !std::isalpha(static_cast<unsigned char>(word[i - 1]))))
        continue;
      int v = 0;
      auto [end, ec] = std::from_chars(word.data() + i + 1, word.data() + word.size(), v);
      if (ec == std::errc() && (end == word.data() + word.size() || *end == '.')) return v;
    }
  return 1;
}

constexpr const char* kOneVersionHint =
    "pick one version: run --patch FILE --message-id ID (of its cover letter or a patch), or save that version only";

// Numbered patches in one mailbox are one run of one series, k/N to m/N with none between
// missing, and each read (fifty-seventh and fifty-eighth attacks: a patch not saved, or whose
// diff was in a part not read, was left out without a word, and the rest built as a stack the
// series never had under the mailbox's name). NUMBERED is in series order where all are numbered.
void require_one_run(const std::vector<std::pair<int, Patch>>& numbered, const std::vector<std::string>& undiffed,
                     const std::string& file) {
  const std::string hint = "save the series' patches (b4 am, git format-patch), or pick one series of a saved thread "
                           "with --message-id";
  if (!undiffed.empty())
    throw UserError("patch " + file + ": no diff was found in " + one_line(join(undiffed, "; ")).substr(0, 300),
                    "a diff in an attachment or an encoding ksandwich does not read: save that patch with git "
                    "format-patch, or leave its message out");
  auto is_numbered = [](auto& n) { return n.second.position > 0 || n.second.total > 0; };
  if (std::none_of(numbered.begin(), numbered.end(), is_numbered)) return;  // "[PATCH] x", a plain diff: file order
  const int total = numbered.front().second.total;
  for (auto& [position, p] : numbered)
    if (position < 1 || p.total != total || position > total)
      throw UserError("patch " + file + ": its patches are not all numbered k/N out of one N (\"" +
                          one_line(p.subject).substr(0, 120) + "\")", hint);
  for (size_t i = 1; i < numbered.size(); ++i)
    if (numbered[i].first != numbered[i - 1].first + 1)
      throw UserError("patch " + file + ": lacks patch " + std::to_string(numbered[i - 1].first + 1) + "/" +
                          std::to_string(total) + " between " + std::to_string(numbered[i - 1].first) + "/" +
                          std::to_string(total) + " and " + std::to_string(numbered[i].first) + "/" + std::to_string(total),
                      hint);
}

bool is_reply(const std::string& subject) { return starts_with(lower(trim(subject)), "re:"); }

// A plain diff's subject: its first line of description, or the file name.
std::string plain_subject(std::string_view text, const std::string& file) {
  for (auto& line : split(text, '\n')) {
    auto t = trim(line);
    if (t.empty()) continue;
    if (starts_with(t, "diff ") || starts_with(t, "--- ") || starts_with(t, "Index:") ||
        starts_with(t, "+++ ") || starts_with(t, "@@"))
      break;
    return one_line(t);  // a header value: one line, whatever the description holds
  }
  auto slash = file.rfind('/');
  return slash == std::string::npos ? file : file.substr(slash + 1);
}

// BYTES as UTF-8: valid UTF-8 sequences as they are, any other byte read as ISO-8859-1 (what
// an undeclared 8-bit header most often is). The result is always valid UTF-8, so a subject
// or an author can go into JSON whatever the mail held.
std::string as_utf8(std::string_view bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size();) {
    auto c = static_cast<unsigned char>(bytes[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool valid = n > 0 && i + n <= bytes.size() && !(n == 2 && c < 0xc2);
    for (size_t k = 1; valid && k < n; ++k) valid = (static_cast<unsigned char>(bytes[i + k]) & 0xc0) == 0x80;
    if (valid) {
      out.append(bytes.substr(i, n));
      i += n;
    } else {
      out += static_cast<char>(0xc0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3f));
      ++i;
    }
  }
  return out;
}

// iconv descriptors by charset name, opened once for one header's decoding and closed with it:
// a header may change charsets at every encoded word, and each iconv_open loads glibc's
// converter again (~0.2 ms: 250,000 words took 45 s).
class Converters {
 public:
  Converters() = default;
  Converters(const Converters&) = delete;
  Converters& operator=(const Converters&) = delete;
  ~Converters() {
    for (auto& [name, cd] : open_)
      if (cd != kNone) iconv_close(cd);
  }
  // NAME's descriptor, reset to its initial state; kNone when iconv does not know it, when
  // NAME is not a plain charset name (glibc takes "x//ANYTHING" as one more converter to open),
  // or when the header has opened kMaxOpen already.
  iconv_t get(const std::string& name) {
    const bool plain = !name.empty() && name.size() <= 40 && std::all_of(name.begin(), name.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == ':';
    });
    if (!plain || (open_.size() >= kMaxOpen && !open_.count(name))) return kNone;
    auto [it, added] = open_.try_emplace(name, kNone);
    if (added) it->second = iconv_open("UTF-8", name.c_str());
    if (it->second != kNone) iconv(it->second, nullptr, nullptr, nullptr, nullptr);
    return it->second;
  }
  static inline const iconv_t kNone = reinterpret_cast<iconv_t>(-1);
  static constexpr size_t kMaxOpen = 16;  // a mail uses one or two

 private:
  std::map<std::string, iconv_t> open_;
};

// TEXT, declared to be in CHARSET (an encoded word's), in UTF-8: converted by iconv (glibc)
// when the charset is one it knows, else read as as_utf8 does.
std::string charset_to_utf8(const std::string& text, const std::string& charset, Converters& converters) {
  auto name = lower(charset);
  if (name.empty() || name == "utf-8" || name == "utf8" || name == "us-ascii") return as_utf8(text);
  iconv_t cd = converters.get(name);
  if (cd == Converters::kNone) return as_utf8(text);
  std::string out(text.size() * 4 + 16, '\0');
  char* in = const_cast<char*>(text.data());
  size_t in_left = text.size(), out_left = out.size();
  char* out_ptr = out.data();
  size_t rc = iconv(cd, &in, &in_left, &out_ptr, &out_left);
  if (rc == static_cast<size_t>(-1)) return as_utf8(text);
  out.resize(out.size() - out_left);
  return as_utf8(out);
}

}  // namespace

std::string decode_header_words(std::string_view value) {
  // Encoded words =?charset?b|q?payload?= (RFC 2047), found by scanning: a header may be long.
  std::string in(value), out;
  size_t last = 0, from = 0;
  bool previous_was_word = false;
  Converters converters;
  while ((from = in.find("=?", from)) != std::string::npos) {
    auto q1 = in.find('?', from + 2);
    bool ok = q1 != std::string::npos && q1 > from + 2 && q1 + 2 < in.size() && in[q1 + 2] == '?' &&
              std::string_view("bBqQ").find(in[q1 + 1]) != std::string_view::npos;
    auto end = ok ? in.find("?=", q1 + 3) : std::string::npos;
    if (ok && end == std::string::npos) break;  // no later word can end either: linear, not quadratic
    if (end == std::string::npos) {
      from += 2;
      continue;
    }
    auto gap = in.substr(last, from - last);
    // Whitespace between two encoded words is dropped (RFC 2047 section 6.2).
    if (!(previous_was_word && trim(gap).empty())) out += gap;
    const char encoding = in[q1 + 1];
    const auto payload = in.substr(q1 + 3, end - q1 - 3);
    auto charset = in.substr(from + 2, q1 - from - 2);
    charset = charset.substr(0, charset.find('*'));  // RFC 2231 language: "iso-8859-1*de"
    out += charset_to_utf8(
        (encoding == 'b' || encoding == 'B') ? decode_base64(payload) : decode_quoted_printable(payload, true), charset,
        converters);
    last = from = end + 2;
    previous_was_word = true;
  }
  out += in.substr(last);
  return as_utf8(out);
}

bool is_mailbox(std::string_view text) {
  auto lines = split(text, '\n');
  size_t i = 0;
  while (i < lines.size() && trim(lines[i]).empty()) ++i;
  if (i >= lines.size()) return false;
  if (starts_with(lines[i], "From ") && i + 1 < lines.size() && is_header_line(lines[i + 1]))
    return true;
  // A saved message without the mbox separator: a header block naming a subject or sender.
  for (; i < lines.size(); ++i) {
    auto line = strip_cr(lines[i]);
    if (line.empty()) break;
    if (line[0] == ' ' || line[0] == '\t') continue;
    auto field = header_field(line);
    if (!field) return false;
    if (field->first == "subject" || field->first == "from" || field->first == "message-id")
      return true;
  }
  return false;
}

namespace {

// One path of a diff header from S at AT, moving AT past it: git's C-style quoted form
// ("a/b\303\244r.c": octal bytes, \t \n \" \\ and the other C escapes) when it starts with a
// quote, else the text up to STOP (a space in a "diff --git" line; a tab or the end in a
// ---/+++ line). Empty when a quoted name never closes.
std::string diff_path(std::string_view s, size_t& at, char stop) {
  if (at >= s.size() || s[at] != '"') {
    auto end = std::min(s.find(stop, at), s.size());
    std::string plain(s.substr(at, end - at));
    at = end;
    return plain;
  }
  std::string out;
  for (size_t i = at + 1; i < s.size(); ++i) {
    char c = s[i];
    if (c == '"') {
      at = i + 1;
      return out;
    }
    if (c != '\\' || i + 1 >= s.size()) {
      out += c;
      continue;
    }
    char e = s[++i];
    if (e >= '0' && e <= '7') {
      int value = 0, digits = 0;
      for (; digits < 3 && i < s.size() && s[i] >= '0' && s[i] <= '7'; ++digits, ++i) value = value * 8 + (s[i] - '0');
      --i;
      out += static_cast<char>(value & 0xff);
      continue;
    }
    static constexpr std::string_view from = "abfnrtv", to = "\a\b\f\n\r\t\v";
    auto k = from.find(e);
    out += k == std::string_view::npos ? e : to[k];
  }
  at = s.size();
  return {};
}

}  // namespace

std::vector<std::string> touched_files(std::string_view diff) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto lines = split(diff, '\n');
  auto add = [&](std::string path) {
    if (path.empty() || path == "/dev/null") return;
    auto slash = path.find('/');
    if (slash != std::string::npos) path = path.substr(slash + 1);  // -p1
    if (seen.insert(path).second) out.push_back(path);
  };
  // The path of a ---/+++ line (HEADER without its CR), up to a tab (diff -u's timestamp).
  auto header_path = [](const std::string& header) {
    size_t at = header.find_first_not_of(' ', 4);
    return at == std::string::npos ? std::string() : trim(diff_path(header, at, '\t'));
  };
  for (size_t i = 0; i < lines.size(); ++i) {
    if (starts_with(lines[i], "diff --git ")) {  // also renames without ---/+++
      auto line = strip_cr(lines[i]);
      // Unquoted, a name may hold spaces ("a/x y.c b/x y.c"): as git apply does, take the
      // split in the middle when both sides name the same file.
      std::string_view names = std::string_view(line).substr(11);
      if (!names.empty() && names[0] != '"' && names.size() % 2 == 1 && names[names.size() / 2] == ' ') {
        std::string a(names.substr(0, names.size() / 2)), b(names.substr(names.size() / 2 + 1));
        auto tail = [](const std::string& p) { return p.substr(p.find('/') + 1); };
        if (a.find('/') != std::string::npos && b.find('/') != std::string::npos && tail(a) == tail(b)) {
          add(b);
          add(a);
          continue;
        }
      }
      size_t at = 11;
      auto first = diff_path(line, at, ' ');
      at = line.find_first_not_of(' ', at);
      auto second = at == std::string::npos ? std::string() : diff_path(line, at, ' ');
      if (!first.empty() && !second.empty()) {
        add(second);
        add(first);
      }
    } else if (starts_with(lines[i], "--- ") && i + 1 < lines.size() &&
               starts_with(lines[i + 1], "+++ ")) {
      add(header_path(strip_cr(lines[i + 1])));
      add(header_path(strip_cr(lines[i])));
    }
  }
  return out;
}

namespace {

void require_bounded_size(std::string_view text, const std::string& file) {
  const char* hint = "no patch series is this large: check it is the file you meant, or split it, or commit it "
                     "to a git tree and run with --source TREE --commit REV";
  if (text.size() > kMaxPatchBytes)
    throw UserError("patch " + file + " holds more than " + std::to_string(kMaxPatchBytes >> 20) + " MiB", hint);
  if (static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) > kMaxPatchLines)
    throw UserError("patch " + file + " holds more than " + std::to_string(kMaxPatchLines) + " lines", hint);
}

}  // namespace

PatchSet parse_patch_file(std::string_view text, const std::string& file) {
  require_bounded_size(text, file);
  PatchSet set;
  auto file_sha = sha256_hex(text);
  if (!is_mailbox(text)) {
    if (!has_diff(text))
      throw UserError("patch " + file + ": no diff found in it",
                      "give a unified diff (git diff, diff -u) or a mailbox saved from a list "
                      "archive");
    Patch p;
    p.file = file;
    p.file_sha256 = file_sha;
    p.subject = plain_subject(text, file);
    p.text = std::string(text);
    p.sha256 = file_sha;
    p.files = touched_files(text);
    set.patches.push_back(std::move(p));
    return set;
  }

  std::vector<std::pair<int, Patch>> numbered;
  std::vector<std::string> undiffed;  // "[PATCH k/N]" messages in which no diff was found
  std::set<int> positions, versions;
  bool all_numbered = true;
  for (auto& lines : split_mailbox(text)) {
    Message m = parse_message(lines);
    // A header value is one line, whatever its encoded words decode to: a Subject that
    // decodes to "x\n\ndiff --git ..." must not become a hunk when the mail is written out.
    auto header = [&m](const char* name) { return one_line(decode_header_words(m.header(name))); };
    auto subject = header("subject");
    auto body = unescape_from(message_text(m));
    if (is_reply(subject)) continue;  // a reply in a saved thread is not part of the series
    auto [position, total] = series_position(subject);
    if (!has_diff(body)) {
      if (position == 0 && total > 0 && !set.cover)
        set.cover = CoverLetter{subject, header("from"), header("date"), header("message-id")};
      if (position > 0) undiffed.push_back(subject);
      continue;
    }
    if (position > 0 && !positions.insert(position).second)
      throw UserError("patch " + file + ": holds patch " + std::to_string(position) + "/" +
                          std::to_string(total) + " twice (two versions of the series?)",
                      kOneVersionHint);
    versions.insert(series_version(subject));
    if (versions.size() > 1)
      throw UserError("patch " + file + ": holds versions " + std::to_string(*versions.begin()) + " and " +
                          std::to_string(*versions.rbegin()) + " of its patches (a saved thread?)",
                      kOneVersionHint);
    all_numbered = all_numbered && position > 0;
    Patch p;
    p.file = file;
    p.file_sha256 = file_sha;
    p.subject = subject;
    p.author = header("from");
    p.date = header("date");
    p.message_id = header("message-id");
    p.position = position;
    p.total = total;
    p.to = header("to");
    p.cc = header("cc");
    p.text = body;
    if (!p.text.empty() && p.text.back() != '\n') p.text += '\n';
    p.sha256 = sha256_hex(p.text);
    p.files = touched_files(p.text);
    numbered.push_back({position, std::move(p)});
  }
  if (numbered.empty())
    throw UserError("patch " + file + ": the mailbox holds no message with a diff",
                    "save the patch messages themselves (not only the replies)");
  // Threads are saved in arrival order; a series applies in its [n/m] order.
  if (all_numbered)
    std::stable_sort(numbered.begin(), numbered.end(),
                     [](auto& a, auto& b) { return a.first < b.first; });
  require_one_run(numbered, undiffed, file);
  int count = static_cast<int>(numbered.size());
  for (int i = 0; i < count; ++i) {
    auto& p = numbered[static_cast<size_t>(i)].second;
    p.index = i + 1;
    p.count = count;
    set.patches.push_back(std::move(p));
  }
  return set;
}

std::string select_series(std::string_view mbox_text, std::string_view message_id, const std::string& file) {
  const auto wanted = bare_message_id(message_id);
  const auto shown = one_line(wanted);
  if (wanted.empty())
    throw UserError("--message-id " + one_line(message_id) + " names no Message-ID",
                    "give it as in the mail's Message-ID: header (<id@host>) or as its lore link");
  if (starts_with(mbox_text, "\x1f\x8b"))
    throw UserError("patch " + file + " is gzip-compressed", "gunzip it first (lore's t.mbox.gz: gunzip t.mbox.gz)");
  require_bounded_size(mbox_text, file);
  struct Mail {
    std::vector<std::string> lines;
    std::string id, subject;
    std::string parent;                // In-Reply-To, or the last of References without one
    std::vector<std::string> parents;  // In-Reply-To and References
    int position = 0, total = 0, version = 1;
    bool reply = false, resend = false;
  };
  std::vector<Mail> mails;
  std::map<std::string, size_t> by_id;
  for (auto& lines : split_mailbox(mbox_text)) {
    Message m = parse_message(lines);
    Mail mail;
    auto ids = message_ids(m.header("message-id"));
    mail.id = ids.empty() ? trim(m.header("message-id")) : ids.front();
    mail.subject = one_line(decode_header_words(m.header("subject")));
    auto in_reply_to = message_ids(m.header("in-reply-to"));
    mail.parents = message_ids(m.header("references"));
    mail.parent = !in_reply_to.empty() ? in_reply_to.front() : mail.parents.empty() ? "" : mail.parents.back();
    if (!mail.parent.empty()) mail.parents.push_back(mail.parent);
    std::tie(mail.position, mail.total) = series_position(mail.subject);
    mail.version = series_version(mail.subject);
    mail.reply = is_reply(mail.subject);
    for (auto& word : bracket_words(mail.subject)) mail.resend = mail.resend || lower(word) == "resend";
    mail.lines = std::move(lines);
    if (!mail.id.empty() && !by_id.emplace(mail.id, mails.size()).second) continue;  // saved twice
    mails.push_back(std::move(mail));
  }
  auto found = by_id.find(wanted);
  if (found == by_id.end()) {  // as typed in another case, when only one message has it so
    std::vector<std::map<std::string, size_t>::iterator> alike;
    for (auto it = by_id.begin(); it != by_id.end(); ++it)
      if (lower(it->first) == lower(wanted)) alike.push_back(it);
    if (alike.size() == 1) found = alike.front();
  }
  if (found == by_id.end())
    throw UserError("patch " + file + ": none of its " + std::to_string(mails.size()) +
                        " messages has the Message-ID <" + shown + ">",
                    "save the whole thread (lore's t.mbox.gz, gunzipped), or give the Message-ID of a message in it");
  const Mail& named = mails[found->second];
  if (named.reply)
    throw UserError("patch " + file + ": <" + shown + "> is a reply (" + named.subject + "), not a patch",
                    "give the Message-ID of the series' cover letter or of one of its patches");
  auto same_series = [&named](const Mail& m) {
    return !m.reply && m.total == named.total && m.version == named.version && m.resend == named.resend;
  };
  // Up from a patch to the message the series hangs from: the cover letter ([PATCH 0/N]),
  // or patch 1 when there is none (git send-email threads every patch below it).
  size_t root = found->second;
  for (size_t steps = 0; steps < mails.size() && mails[root].position > 0; ++steps) {
    auto up = by_id.find(mails[root].parent);
    if (up == by_id.end() || !same_series(mails[up->second])) break;
    root = up->second;
  }
  // Down: every message of the series threaded below the root, at any depth.
  std::multimap<std::string, size_t> children;
  for (size_t i = 0; i < mails.size(); ++i)
    for (auto& parent : std::set<std::string>(mails[i].parents.begin(), mails[i].parents.end()))
      children.emplace(parent, i);
  // A patch without numbering is a series of one: what is posted below it is someone else's.
  std::vector<bool> chosen(mails.size(), false);
  std::vector<size_t> queue;
  if (named.total > 0) queue.push_back(root);
  chosen[root] = true;
  while (!queue.empty()) {
    auto at = queue.back();
    queue.pop_back();
    auto [first, last] = children.equal_range(mails[at].id);
    for (auto it = first; it != last; ++it)
      if (!chosen[it->second] && same_series(mails[it->second])) {
        chosen[it->second] = true;
        queue.push_back(it->second);
      }
  }
  std::string out;
  std::map<int, std::string> positions;  // -> the Message-ID of that patch
  for (size_t i = 0; i < mails.size(); ++i) {
    if (!chosen[i]) continue;
    if (auto [at, added] = positions.emplace(mails[i].position, mails[i].id); mails[i].position > 0 && !added)
      throw UserError("patch " + file + ": the series of <" + shown + "> has two patches " +
                          std::to_string(mails[i].position) + "/" + std::to_string(named.total) + ": <" +
                          one_line(at->second) + "> and <" + one_line(mails[i].id) + ">",
                      "give the Message-ID of the one version's cover letter, or save that version only");
    out += "From ksandwich-select-series Thu Jan  1 00:00:00 1970\n" + join(mails[i].lines, "\n") + "\n";
  }
  if (named.total > 0 && static_cast<int>(positions.size() - positions.count(0)) != named.total) {
    std::vector<std::string> missing;
    for (int k = 1; k <= named.total && missing.size() < 10; ++k)
      if (!positions.count(k)) missing.push_back(std::to_string(k) + "/" + std::to_string(named.total));
    throw UserError("patch " + file + ": the series of <" + shown + "> lacks patch " + join(missing, ", ") +
                        " in this mailbox",
                    "save the whole thread (lore's t.mbox.gz), not only some of its messages; a version whose "
                    "patches each answer the earlier version's, with no cover letter, is not one thread: save "
                    "that version's patches alone and give them as --patch without --message-id");
  }
  return out;
}

// "Hunk #N FAILED at L" in LINE -> {N, L}. A scan, not a regular expression: patch echoes the
// mail's own text ("text leading up to this"), and std::regex recurses per character.
std::optional<std::pair<std::string, std::string>> failed_hunk(std::string_view line) {
  auto digits = [](std::string_view s) {
    size_t n = 0;
    while (n < s.size() && std::isdigit(static_cast<unsigned char>(s[n]))) ++n;
    return n;
  };
  for (size_t at = line.find("Hunk #"); at != std::string_view::npos; at = line.find("Hunk #", at + 1)) {
    auto rest = line.substr(at + 6);
    auto n = digits(rest);
    if (n == 0 || rest.substr(n, 11) != " FAILED at ") continue;
    auto l = digits(rest.substr(n + 11));
    if (l == 0) continue;
    return std::pair{std::string(rest.substr(0, std::min<size_t>(n, 20))),
                     std::string(rest.substr(n + 11, std::min<size_t>(l, 20)))};
  }
  return std::nullopt;
}

std::string describe_patch_failure(std::string_view output) {
  std::vector<std::string> problems;
  std::string current;
  auto lines = split(output, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    auto line = trim(lines[i]);
    if (starts_with(line, "checking file ") || starts_with(line, "patching file ")) {
      current = trim(line.substr(14));
    } else if (auto hunk = failed_hunk(line)) {
      problems.push_back("hunk #" + hunk->first + " of " + current +
                         " does not apply (expected at line " + hunk->second + ")");
    } else if (starts_with(line, "can't find file to patch")) {
      std::string missing = "a file";
      for (size_t j = i + 1; j < lines.size() && j < i + 12; ++j) {
        auto l = trim(lines[j]);
        if (starts_with(l, "|+++ ") || starts_with(l, "|--- ")) {
          auto path = trim(std::string_view(l).substr(5));
          path = path.substr(0, path.find('\t'));
          auto slash = path.find('/');
          if (path != "/dev/null") missing = slash == std::string::npos ? path : path.substr(slash + 1);
          if (starts_with(l, "|+++ ")) break;
        }
      }
      problems.push_back(missing + " does not exist in the source");
    } else if (line.find("Reversed (or previously applied) patch detected") != std::string::npos) {
      problems.push_back(current + ": already applied (or reversed)");
    } else if (line.find("Only garbage was found") != std::string::npos) {
      problems.push_back("no diff found in it");
    } else if (line.find("malformed patch") != std::string::npos) {
      problems.push_back(line.substr(line.find("malformed")));
    }
  }
  if (!problems.empty()) return join(problems, "; ");
  auto tail = trim(output);
  if (tail.size() > 400) tail = "..." + tail.substr(tail.size() - 400);
  return tail.empty() ? "patch failed without saying why" : tail;
}

nlohmann::json to_json(const Patch& p) {
  return {{"file", p.file},       {"file_sha256", p.file_sha256}, {"index", p.index},
          {"count", p.count},     {"subject", p.subject},         {"author", p.author},
          {"date", p.date},       {"message_id", p.message_id},   {"to", p.to},
          {"cc", p.cc},           {"sha256", p.sha256},           {"files", p.files}};
}

nlohmann::json to_json(const CoverLetter& c) {
  return {{"subject", c.subject}, {"author", c.author}, {"date", c.date},
          {"message_id", c.message_id}};
}

}  // namespace ks::kernel

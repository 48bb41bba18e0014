// The string helpers every printed command and header line goes through.
#include <catch2/catch.hpp>

#include "util/files.hpp"

TEST_CASE("shell quoting survives single quotes") {
  CHECK(ks::shell_quote("plain") == "'plain'");
  CHECK(ks::shell_quote("it's") == "'it'\\''s'");
  CHECK(ks::shell_quote("") == "''");
  CHECK(ks::shell_quote("$(rm -rf /)`x`\n") == "'$(rm -rf /)`x`\n'");
}

TEST_CASE("one_line_cut keeps at most its bytes, never half a character, and says it cut") {
  CHECK(ks::one_line_cut("short\n", 10) == "short ");
  CHECK(ks::one_line_cut(std::string(1 << 20, 'A'), 200) == std::string(200, 'A') + "...");
  CHECK(ks::one_line_cut("a\xc3\xa9b", 2) == "a...");  // the cut falls inside the two bytes of an e-acute
  CHECK(ks::one_line_cut("ab\x1b", 2) == "ab...");
}

TEST_CASE("one_line turns every control character into a space and keeps the rest") {
  CHECK(ks::one_line("a\r\nBcc: x") == "a  Bcc: x");
  CHECK(ks::one_line("\x1b[2Jverdict\x7f") == " [2Jverdict ");
  CHECK(ks::one_line("Grüße <a@b>") == "Grüße <a@b>");  // UTF-8 bytes are not control characters
  // C1 controls in UTF-8 (U+009B is a terminal's CSI) and bidi overrides (U+202E) and isolates.
  CHECK(ks::one_line("a\xc2\x9b" "2Jb") == "a 2Jb");
  CHECK(ks::one_line("NO_CHANGE \xe2\x80\xaeNOISSERGER") == "NO_CHANGE  NOISSERGER");
  CHECK(ks::one_line("x\xe2\x81\xa6y\xe2\x81\xa9") == "x y ");
  // Line and paragraph separators (U+2028, U+2029): a new line in some viewers (twelfth attack).
  CHECK(ks::one_line("clone\xe2\x80\xa8Verdict: NO_CHANGE\xe2\x80\xa9") == "clone Verdict: NO_CHANGE ");
  CHECK(ks::printable_lines("a\xe2\x80\xa8" "b") == "a b");
  // The other Unicode spaces are plain ones: b4 takes them for spaces (fourteenth attack).
  CHECK(ks::one_line("a\xc2\xa0" "b\xe2\x80\x8a" "c\xe3\x80\x80" "d\xe2\x80\xaf" "e") == "a b c d e");
  CHECK(ks::one_line("\xe2\x80" "x") == "??x");  // a character cut in two: not a space, not UTF-8
  CHECK(ks::one_line("\xc2\xa9 \xe2\x80\x94") == "\xc2\xa9 \xe2\x80\x94");  // (c) and an em dash stay
  // Invisible format characters are seen as spaces: zero-width space, word joiner, BOM, right-to-
  // left mark, soft hyphen, Hangul filler, Arabic letter mark, a Unicode tag (seventeenth attack).
  CHECK(ks::one_line("\xe2\x80\x8bVerdict") == " Verdict");
  CHECK(ks::printable_lines("a\n\xe2\x81\xa0" "b\xef\xbb\xbf" "c\xe2\x80\x8f") == "a\n b c ");
  CHECK(ks::one_line("\xc2\xad" "d\xe3\x85\xa4" "e\xd8\x9c" "f\xf3\xa0\x80\x81") == " d e f ");
  // Malformed or overlong UTF-8 is '?', a byte each (an overlong U+200B is not one; a stray 0x9b
  // is ESC [ to an 8-bit terminal): what comes out is UTF-8, which JSON output needs (twenty-
  // second attack: a name cut at 80 bytes inside a character made `validate --format json` exit 70).
  CHECK(ks::one_line("\xe0\x80\x8b" "x\xf8\x88") == "???x??");
  CHECK(ks::one_line("a\x9b" "2J") == "a?2J");
  CHECK(ks::one_line((std::string(79, 'a') + "\xe2\x9b\x84").substr(0, 80)) == std::string(79, 'a') + "?");
  CHECK(ks::one_line("\xf0\x9f\x98\x80 \xe6\x97\xa5") == "\xf0\x9f\x98\x80 \xe6\x97\xa5");  // an emoji, a CJK letter
}

TEST_CASE("printable_lines keeps the newlines and nothing else below a space") {
  CHECK(ks::printable_lines("a\nb\r\x1b[1m\tc\n") == "a\nb  [1m c\n");
}

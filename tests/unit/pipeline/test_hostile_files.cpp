// Seeded mutations of real inputs — the shipped experiments and real bundles — through the
// parsers that read other people's files: byte flips, truncation, deep nesting, huge and
// fractional numbers, duplicate keys, NULs, type swaps, deleted keys, spliced chunks.
// Every input is either accepted or refused with a UserError (what the CLI turns into
// exit 2); no other exception, no crash. The same seed gives the same cases everywhere, so
// a failure names the case that reproduces it. (tests/fuzz runs the same entry points
// under libFuzzer in a clang build.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <functional>
#include <typeinfo>

#include "experiment/experiment.hpp"
#include "experiment/strict_json.hpp"
#include "pipeline/bundle_file.hpp"
#include "pipeline/run.hpp"
#include "pipeline/validate.hpp"
#include "kernel/patches.hpp"
#include "kernel/series.hpp"
#include "support/temp_dir.hpp"
#include "util/journal.hpp"
#include "stats/random.hpp"
#include "support/paths.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

using namespace ks;
using nlohmann::json;

namespace {

using Rng = stats::Xoshiro256;

size_t pick(Rng& rng, size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng.below(n)); }

template <typename T>
const T& one_of(Rng& rng, const std::vector<T>& items) {
  return items[pick(rng, items.size())];
}

// --- Mutations of the text ---

std::string flip_bits(std::string s, Rng& rng) {
  for (size_t k = 1 + pick(rng, 8); k > 0 && !s.empty(); --k) s[pick(rng, s.size())] ^= char(1 << pick(rng, 8));
  return s;
}

std::string truncate(std::string s, Rng& rng) { return s.substr(0, pick(rng, s.size())); }

std::string insert_special(std::string s, Rng& rng) {
  static const std::vector<std::string> specials = {
      std::string(1, '\0'), "\\u0000", "\"", "\\", "{", "}", "[", "]", ",", ":", "\xff\xfe", "\xc3\x28",
      "/*", "NaN", "Infinity", "\n", "\"a\":1,"};
  s.insert(pick(rng, s.size() + 1), one_of(rng, specials));
  return s;
}

std::string deep_nesting(std::string s, Rng& rng) {
  const size_t depth = one_of<size_t>(rng, {63, 64, 65, 1000, 100000});
  const bool arrays = pick(rng, 2) == 0;
  std::string open, close;
  for (size_t i = 0; i < depth; ++i) {
    open += arrays ? "[" : "{\"a\":";
    close += arrays ? "]" : "}";
  }
  // Either a balanced deep value replacing a number, or unbalanced openers anywhere.
  auto pos = s.find_first_of("0123456789", pick(rng, s.size()));
  if (pos != std::string::npos && pick(rng, 2) == 0) return s.replace(pos, 1, open + "1" + close);
  s.insert(pick(rng, s.size() + 1), open);
  return s;
}

const std::vector<std::string> kOddNumbers = {
    "1e999", "-1e999", "1e-400", "18446744073709551616", "18446744073709551615", "9223372036854775808",
    "-9223372036854775809", "4294967296", "4294967295", "2147483648", "-1", "-0", "0", "2.5", "0.5",
    "1e30", "1e12", "9007199254740993", "-2147483649", "100000000000000000000000000000000"};

std::string odd_number(std::string s, Rng& rng) {
  // Replace one number token (a run of number characters after ':' or '[' or ',').
  std::vector<size_t> starts;
  for (size_t i = 1; i < s.size(); ++i)
    if ((std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '-') &&
        !std::isalnum(static_cast<unsigned char>(s[i - 1])) && s[i - 1] != '.' && s[i - 1] != '"')
      starts.push_back(i);
  if (starts.empty()) return s;
  const size_t at = one_of(rng, starts);
  size_t end = at;
  while (end < s.size() && std::strchr("0123456789+-.eE", s[end])) ++end;
  return s.replace(at, end - at, one_of(rng, kOddNumbers));
}

std::string duplicate_key(std::string s, Rng& rng) {
  // After an object's '{', repeat its first key with another value.
  std::vector<size_t> opens;
  for (size_t i = 0; i + 1 < s.size(); ++i)
    if (s[i] == '{') opens.push_back(i);
  if (opens.empty()) return s;
  const size_t at = one_of(rng, opens);
  const auto q1 = s.find('"', at), q2 = q1 == std::string::npos ? q1 : s.find('"', q1 + 1);
  if (q2 == std::string::npos) return s;
  const std::string key = s.substr(q1, q2 - q1 + 1);
  return s.insert(at + 1, key + ": " + one_of<std::string>(rng, {"0", "\"x\"", "null", "{}", "[]", "true"}) + ", ");
}

std::string splice(std::string s, Rng& rng) {
  if (s.size() < 2) return s;
  const size_t from = pick(rng, s.size()), len = 1 + pick(rng, std::min<size_t>(s.size() - from, 4096));
  return s.insert(pick(rng, s.size() + 1), s.substr(from, len));
}

// --- Mutations of the tree (always valid JSON: the parser's checks behind the syntax) ---

void all_pointers(const json& j, const json::json_pointer& at, std::vector<json::json_pointer>& out) {
  out.push_back(at);
  if (j.is_object())
    for (auto& [k, v] : j.items()) all_pointers(v, at / k, out);
  else if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i) all_pointers(j[i], at / i, out);
}

std::string swap_type(const std::string& text, Rng& rng) {
  // Only on text that is JSON still (an earlier mutation may have broken it) and shallow
  // enough to walk recursively.
  try {
    experiment::check_json_text(text, "seed");
  } catch (const UserError&) {
    return text;
  }
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return text;
  std::vector<json::json_pointer> nodes;
  all_pointers(j, json::json_pointer(), nodes);
  const auto& at = one_of(rng, nodes);
  static const std::vector<json> replacements = {
      "text", "", std::string(70000, 'x'), 0, -1, 2.5, 1e300, -1e300, 4294967296.0, 18446744073709551615ULL,
      true, false, nullptr, json::array(), json::object(), json::array({1, 2, 3}), json{{"a", 1}},
      json::array({json::object()}), "../../../../etc/passwd", "/sys/../tmp/x"};
  if (at.empty()) return one_of(rng, replacements).dump();
  const int action = static_cast<int>(pick(rng, 3));
  if (action == 0 && at.back().size() && j[at.parent_pointer()].is_object()) {
    j[at.parent_pointer()].erase(at.back());  // a key deleted
  } else if (action == 1 && j[at].is_array() && !j[at].empty()) {
    json entry = j[at][pick(rng, j[at].size())];  // a copy: push_back may reallocate
    j[at].push_back(std::move(entry));             // an entry repeated
  } else {
    j[at] = one_of(rng, replacements);
  }
  return j.dump(pick(rng, 2) ? 2 : -1);
}

struct Mutation {
  const char* name;
  std::function<std::string(const std::string&, Rng&)> apply;
};

const std::vector<Mutation>& mutations() {
  static const std::vector<Mutation> all = {
      {"flip bits", flip_bits},       {"truncate", truncate},         {"insert special", insert_special},
      {"deep nesting", deep_nesting}, {"odd number", odd_number},     {"duplicate key", duplicate_key},
      {"splice", splice},             {"swap type", swap_type},       {"swap type", swap_type},
      {"odd number", odd_number}};
  return all;
}

struct Outcome {
  int accepted = 0, refused = 0;
  std::vector<std::string> failures;  // what threw something other than UserError
};

// Feeds CASES mutants of the SEEDS to CONSUME; any exception but UserError is a failure.
Outcome mutate_and_feed(const std::vector<std::pair<std::string, std::string>>& seeds, int cases, uint64_t seed,
                        const std::function<void(const std::string&)>& consume,
                        const std::vector<Mutation>& with = mutations()) {
  Outcome o;
  Rng rng(seed);
  for (int i = 0; i < cases; ++i) {
    const auto& [origin, text] = seeds[static_cast<size_t>(i) % seeds.size()];
    const auto& m = one_of(rng, with);
    std::string mutant = m.apply(text, rng);
    if (pick(rng, 4) == 0) mutant = one_of(rng, with).apply(mutant, rng);  // sometimes two
    try {
      consume(mutant);
      ++o.accepted;
    } catch (const UserError&) {
      ++o.refused;
    } catch (const std::exception& err) {
      auto saved = std::filesystem::temp_directory_path() / fmt::format("ks-mutant-{}-{}.json", seed, i);
      write_file(saved, mutant);
      o.failures.push_back(fmt::format("case {} ({} of {}): {}: {} (input saved as {})", i, m.name, origin,
                                       typeid(err).name(), err.what(), saved.string()));
    }
  }
  return o;
}

// --- Mutations of a mail: what a hostile mailbox holds at the start of a line ---

std::string mail_line(std::string s, Rng& rng) {
  static const std::vector<std::string> lines = {
      "Subject: [PATCH 99999999999999999999/2] =?utf-8?q?x=0A=0Adiff_--git_a/Makefile_b/Makefile?=",
      "Subject: =?utf-8?b?eAoKZGlmZiAtLWdpdCBhL01ha2VmaWxlIGIvTWFrZWZpbGUK?=",
      "Subject: [" + std::string(200000, 'x'),
      "Content-Type: multipart/mixed; boundary=\"" + std::string(100000, 'b') + "\"",
      "Content-Transfer-Encoding: base64",
      "Content-Transfer-Encoding: quoted-printable",
      std::string(40000, '>'),
      "From nobody Mon Sep 17 00:00:00 2001",
      ">From a quoted separator",
      "diff --git a/" + std::string(200000, 'a') + " b/x",
      "--- /dev/null",
      "+++ b/../../etc/passwd",
      "@@ -1,99999999999 +1,99999999999 @@",
      "Message-ID: <x@y>\r\nBcc: someone@example.org",
      "From: \"a'$(touch /tmp/ks-pwned)'\" <a@x>",
      "=?utf-8?q?" + std::string(50000, '=') + "?=",
      "--" + std::string(100, 'b') + "--"};
  auto at = s.find('\n', pick(rng, s.size() + 1));
  return s.insert(at == std::string::npos ? s.size() : at + 1, one_of(rng, lines) + "\n");
}

const std::vector<Mutation>& mail_mutations() {
  static const std::vector<Mutation> all = {{"flip bits", flip_bits}, {"truncate", truncate},
                                            {"insert special", insert_special}, {"splice", splice},
                                            {"mail line", mail_line}, {"mail line", mail_line},
                                            {"mail line", mail_line}};
  return all;
}

std::vector<std::pair<std::string, std::string>> files_in(const std::filesystem::path& dir,
                                                           const std::string& extension = ".json") {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == extension) out.emplace_back(entry.path().filename().string(), read_file(entry.path()));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("hostile files: mutated shipped experiments are parsed or refused with a UserError, nothing else") {
  auto seeds = files_in(test::source_dir() / "configs/experiments");
  REQUIRE(seeds.size() >= 5);
  auto o = mutate_and_feed(seeds, 6000, 11, [](const std::string& text) {
    auto e = experiment::parse_text(text, "mutant.json");
    (void)experiment::plan_points(e);
  });
  for (auto& f : o.failures) UNSCOPED_INFO(f);
  CHECK(o.failures.empty());
  // The mutations reach past the syntax: some mutants are valid experiments, most not.
  CHECK(o.accepted > 50);
  CHECK(o.refused > 3000);
}

TEST_CASE("hostile files: mutated real bundles are loaded and recomputed, or refused with a UserError") {
  auto seeds = files_in(test::source_dir() / "tests/data/bundles");
  REQUIRE(seeds.size() >= 2);
  // What validate does with a bundle someone sent: read strictly, then recompute. The
  // recomputation (a seeded bootstrap) costs ~50 ms, so every 16th loaded mutant gets it:
  // the test stays near 15 s.
  int loaded = 0, recomputed = 0;
  auto o = mutate_and_feed(seeds, 3000, 15, [&](const std::string& text) {
    auto bundle = pipeline::parse_bundle_text(text, "mutant.json");
    if (++loaded % 16 != 0) return;
    ++recomputed;
    (void)pipeline::check_recomputation(experiment::parse_json_strict(text, "mutant.json"), bundle);
  });
  for (auto& f : o.failures) UNSCOPED_INFO(f);
  CHECK(o.failures.empty());
  CHECK(recomputed > 40);  // a whole number of a count made 1e30 or 2.5 is refused (thirty-sixth attack)
  CHECK(o.refused > 600);
}

// Issue 27: the mail parser, the journal reader and the resume loader get the same treatment.

TEST_CASE("hostile files: mutated mails are parsed and split, or refused with a UserError") {
  auto seeds = files_in(test::source_dir() / "kernel-patches", ".patch");
  REQUIRE(seeds.size() >= 3);
  auto o = mutate_and_feed(
      seeds, 1500, 27,
      [](const std::string& text) {
        auto set = kernel::parse_patch_file(text, "mutant.patch");
        for (auto& file : kernel::split_series(text, "mutant.mbox"))
          // What series writes is read back as one patch with one-line headers.
          if (file.subject.find_first_of("\r\n") != std::string::npos)
            throw std::logic_error("a subject of several lines: " + file.subject.substr(0, 80));
      },
      mail_mutations());
  for (auto& f : o.failures) UNSCOPED_INFO(f);
  CHECK(o.failures.empty());
  CHECK(o.accepted > 300);
}

TEST_CASE("hostile files: a mutated journal reads as its sealed lines, never more, never a crash") {
  test::TempDir tmp("ks-hostile-journal");
  const std::string key(32, 'k');
  auto file = tmp.path / "journal.jsonl";
  {
    journal::Journal j(file, key);
    auto mount = j.change("mount", {{"target", "/run/ksandwich/mnt-1"}, {"source", "/dev/ram0"}, {"fstype", "btrfs"}});
    j.amend(mount, {{"mounted", {{"dev", "0:27"}, {"ino", 256}, {"type", "directory"}}}});
    j.change("knob", {{"path", "/proc/sys/vm/dirty_ratio"}, {"old_hex", "32300a"}, {"value", "5"}});
    j.change("file", {{"path", "/dev/shm/ksandwich-loop-1"}, {"dev", "0:27"}, {"ino", 317}});
    j.undone(mount);
  }
  const auto sealed = read_file(file);
  const auto honest = journal::read(file, key).entries.size();
  REQUIRE(honest == 3);
  auto o = mutate_and_feed({{"journal.jsonl", sealed}}, 1500, 28, [&](const std::string& text) {
    write_file(file, text);
    auto c = journal::read(file, key);
    (void)c.pending();
    // A mutation cannot forge a line: what reads back is at most what was sealed.
    if (c.entries.size() > honest) throw std::logic_error("more entries than were sealed");
  });
  for (auto& f : o.failures) UNSCOPED_INFO(f);
  CHECK(o.failures.empty());
}

TEST_CASE("hostile files: mutated bundles through the resume loader are resumable or refused with a UserError") {
  auto seeds = files_in(test::source_dir() / "tests/data/bundles");
  test::TempDir dir("ks-hostile-resume");
  auto o = mutate_and_feed(seeds, 1500, 29, [&](const std::string& text) {
    auto bundle = pipeline::parse_bundle_text(text, "mutant.json");
    pipeline::check_resumable(bundle, experiment::parse(bundle.experiment), dir.path);
  });
  for (auto& f : o.failures) UNSCOPED_INFO(f);
  CHECK(o.failures.empty());
  CHECK(o.refused > 300);
}

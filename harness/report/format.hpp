#pragma once
// Number and text formatting shared by the report views. Pure.
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evidence/clock.hpp"

namespace ks::report::detail {

// The text view's line width: a mail reader's 80 columns, less room for one "> " quote.
constexpr size_t kTextWidth = 78;
constexpr size_t kReplyWidth = 72;  // a mail's lines

// How a metric is shown: its unit, the factor from the bundle's value to that unit, and
// which direction is better.
struct Unit {
  std::string name;  // "ns/op", "IOPS", "MiB/s"
  double scale = 1;  // shown = value * scale
  bool higher_is_better = false;

  std::string better() const { return higher_is_better ? "higher is better" : "lower is better"; }
};
// The unit of METRIC as measured with CLOCK: under the instruction clock a nanosecond is
// an instruction (ns/op reads instr/op) and a second is virtual.
Unit unit_for(const std::string& metric, const evidence::Clock& clock);

std::string fixed(double value, int decimals = 3);           // "2943.790"; "n/a" if not finite
std::string percent(double value, int decimals = 3);         // "0.905%", "-26.986%"
std::string signed_percent(double value, int decimals = 3);  // "+3.100%", "-26.986%"
std::string ratio_percent(double ratio, int decimals = 1);   // 0.73 -> "-27.0%"
// A spread as LKP prints it, stddev as a percentage of the mean: "+-0.9%" (ASCII for mail).
std::string spread_percent(double stddev, double mean);
std::string thousands(uint64_t n);                           // 10000 -> "10,000"
std::string p_value(double p);                               // "p=0.0012", "p<0.0001"

// Hex digests and other long tokens become "first 12 chars...", so tables stay narrow.
std::string shorten(const std::string& value);

// "a", "a and b", "a, b, and c".
std::string english_list(const std::vector<std::string>& items);

// Greedy word wrap; the first line starts with `first`, the others with `rest`.
// Whether TEXT holds an address (x@y: no space on either side of the @).
bool holds_address(std::string_view text);
// Whether b4 could take LINE for a trailer: its rule, ^\s*(\w\S+):\s (the name is the whole
// first word, up to its last colon), or a line of only "<address>", which b4 joins to the line
// above.
bool reads_as_trailer(std::string_view line);

std::string wrap(std::string_view text, size_t width, std::string_view first = {},
                 std::string_view rest = {});

// A JSON scalar as a short string ("" for null, objects; arrays joined with spaces).
std::string scalar(const nlohmann::json& value);

// The first of `keys` that OBJECT holds as a non-empty scalar, as a string; "" otherwise.
std::string first_of(const nlohmann::json& object, std::initializer_list<const char*> keys);

// OBJECT[key] as a non-negative whole number (JSON integers may be signed or unsigned).
std::optional<uint64_t> count_of(const nlohmann::json& object, const char* key);

// OBJECT[key] when OBJECT is an object holding it as a boolean, number or string as
// FALLBACK is one, else FALLBACK: a field of another type, which a schema leaves untyped or a
// hand made, never ends a report (forty-sixth attack: exit 70 on `"seconds": "x"`).
bool field_or(const nlohmann::json& object, const char* key, bool fallback);
double field_or(const nlohmann::json& object, const char* key, double fallback);
std::string field_or(const nlohmann::json& object, const char* key, const std::string& fallback);

// "Name <email>" -> "Name".
std::string display_name(const std::string& author);

}  // namespace ks::report::detail

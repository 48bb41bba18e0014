#pragma once
// Kernel .config files and config fragments as values: parse, merge, verify. Pure.
//
// Kconfig silently drops a requested symbol whose dependencies are missing, so after
// olddefconfig every symbol a fragment asked for is checked against what came out.
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ks::kernel {

// One assignment as written: CONFIG_FOO=y, CONFIG_BAR="text", or "# CONFIG_BAZ is not set"
// (value "n"). `symbol` has no CONFIG_ prefix.
struct ConfigLine {
  std::string symbol;
  std::string value;
  std::string origin;  // "btrfs-bench.config:17"
};

// Symbol -> value; "n" for "is not set". A symbol absent from a .config is also n.
using ConfigValues = std::map<std::string, std::string>;

// Assignments in file order; comments and blank lines are skipped. Throws UserError
// naming origin:line for a line that is neither an assignment nor a comment.
std::vector<ConfigLine> parse_fragment(std::string_view text, const std::string& origin);

// A full .config as a map (later assignments win, as in Kconfig).
ConfigValues parse_config(std::string_view text);

// The value of SYMBOL in a .config map, "n" when absent.
std::string value_of(const ConfigValues& config, const std::string& symbol);

// Base .config with the fragments laid over it: an assignment from a fragment replaces the
// base's line for that symbol (no "override: reassigning" noise from Kconfig), later
// fragments win over earlier ones.
std::string merge_config(std::string_view base, const std::vector<ConfigLine>& requested);

// The requested assignments, last one per symbol winning (what Kconfig was asked for).
std::vector<ConfigLine> effective_requests(const std::vector<ConfigLine>& requested);

// A requested symbol that did not come out as asked.
struct ConfigMismatch {
  ConfigLine requested;
  std::string actual;  // value in the normalized .config ("n" when absent)
  std::string why;     // filled by explain() when the Kconfig sources are at hand
};

// Compares every requested assignment with the normalized config. "m" is satisfied by
// "y" when CONFIG_MODULES is off (Kconfig builds it in).
std::vector<ConfigMismatch> verify_config(const std::vector<ConfigLine>& requested,
                                          const ConfigValues& normalized);

// "CONFIG_FOO=y" / "# CONFIG_FOO is not set"
std::string format_assignment(const std::string& symbol, const std::string& value);

}  // namespace ks::kernel

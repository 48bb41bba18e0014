#pragma once
// Enough of the kernel's Kconfig language to say WHY a requested symbol did not come out as
// asked: where each symbol is defined, what it depends on (its own `depends on` plus the
// enclosing `if`, `menu` and `choice` blocks, across `source`), whether the user can set it
// (a prompt, and the prompt's `if`), and who selects it. Pure: files come from a reader.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kernel/kconfig.hpp"

namespace ks::kernel {

struct KconfigDependency {
  std::string expr;   // "SHMEM", "PCI && BLOCK", "$(cc-option,-mfoo)"
  std::string where;  // "fs/Kconfig:166" or "if CRYPTO at crypto/Kconfig:22"
};

struct KconfigDefinition {
  std::string where;  // file:line of the `config` line
  std::string type;   // bool | tristate | string | int | hex | "" when not given here
  bool has_prompt = false;
  std::string prompt_if;  // condition of the prompt, empty when unconditional
  std::vector<KconfigDependency> depends;
  bool in_choice = false;  // one of the members of a `choice` block
};

struct KconfigSelect {
  std::string by;         // the selecting symbol
  std::string condition;  // `select X if COND`
  std::string where;
};

struct KconfigIndex {
  std::map<std::string, std::vector<KconfigDefinition>> symbols;
  std::map<std::string, std::vector<KconfigSelect>> selected_by;
  std::vector<std::string> files;  // every Kconfig file read, in order
};

// Reads a file relative to the source tree; nullopt when it does not exist.
using KconfigReader = std::function<std::optional<std::string>(const std::string& relative_path)>;

// Kconfig files one scan reads at most (Linux 6.1 has 1,704), and the bytes of one (its
// largest has about 100 KB).
inline constexpr size_t kMaxKconfigFiles = 10'000;
inline constexpr size_t kMaxKconfigBytes = size_t(4) << 20;
// All of them together: Linux 6.1's 1,704 Kconfig files hold 6.4 MB.
inline constexpr size_t kMaxKconfigTotalBytes = size_t(64) << 20;

// Scans from the top-level "Kconfig", following `source` with $(SRCARCH) = arch: only
// relative paths inside the tree, each file once however it is spelled, at most
// kMaxKconfigFiles of them.
KconfigIndex scan_kconfig(const KconfigReader& read, const std::string& arch = "x86");

// Evaluates a Kconfig expression against a .config: 0 = n, 1 = m, 2 = y. Unknown macro
// calls such as $(cc-option,...) count as y (they were true or false when Kconfig ran;
// we cannot tell, so they are never blamed).
int evaluate_kconfig_expr(const std::string& expr, const ConfigValues& config);

// One sentence: why SYMBOL is ACTUAL although REQUESTED was asked for, e.g.
// "depends on SHMEM (fs/Kconfig:166), and SHMEM=n".
std::string explain(const KconfigIndex& index, const ConfigValues& config,
                    const std::string& symbol, const std::string& requested,
                    const std::string& actual);

}  // namespace ks::kernel

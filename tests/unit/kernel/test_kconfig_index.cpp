#include <catch2/catch.hpp>
#include <map>

#include "kernel/kconfig_index.hpp"

using namespace ks::kernel;

namespace {

// A miniature Kconfig tree with the shapes that matter: `source` with $(SRCARCH), `if`
// blocks around entries, menus with dependencies, prompts with conditions, help text that
// mentions "depends on", and a select.
const std::map<std::string, std::string> kTree = {
    {"Kconfig",
     "mainmenu \"Linux\"\n"
     "source \"fs/Kconfig\"\n"
     "source \"arch/$(SRCARCH)/Kconfig\"\n"
     "menuconfig CRYPTO\n"
     "\ttristate \"Cryptographic API\"\n"
     "if CRYPTO\n"
     "menu \"Hashes\"\n"
     "\tdepends on X86\n"
     "config CRYPTO_FAST\n"
     "\ttristate \"fast crc\"\n"
     "\thelp\n"
     "\t  This help text depends on NOTHING and\n"
     "\t  select NOBODY.\n"
     "\n"
     "\t  Second paragraph.\n"
     "endmenu\n"
     "endif # CRYPTO\n"
     "choice\n"
     "\tprompt \"Allocator\"\n"
     "config SLUB\n"
     "\tbool \"SLUB\"\n"
     "config SLOB\n"
     "\tbool \"SLOB\"\n"
     "endchoice\n"},
    {"fs/Kconfig",
     "config SHMEM\n"
     "\tbool \"Use full shmem filesystem\" if EXPERT\n"
     "\tdefault y\n"
     "config TMPFS\n"
     "\tbool \"Tmpfs\"\n"
     "\tdepends on SHMEM\n"
     "config BTRFS_FS\n"
     "\ttristate \"Btrfs\"\n"
     "\tdepends on BLOCK && (X86 || ARM)\n"
     "\tselect CRYPTO\n"
     "config HPET_TIMER\n"
     "\tdef_bool X86_64\n"},
    {"arch/x86/Kconfig",
     "config X86\n"
     "\tdef_bool y\n"},
};

KconfigIndex index() {
  return scan_kconfig([](const std::string& path) -> std::optional<std::string> {
    auto it = kTree.find(path);
    if (it == kTree.end()) return std::nullopt;
    return it->second;
  });
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("scan_kconfig follows source and records inherited dependencies", "[build][kconfig]") {
  auto idx = index();
  CHECK(idx.files == std::vector<std::string>{"Kconfig", "fs/Kconfig", "arch/x86/Kconfig"});
  REQUIRE(idx.symbols.count("CRYPTO_FAST"));
  auto& fast = idx.symbols["CRYPTO_FAST"][0];
  CHECK(fast.where == "Kconfig:9");
  CHECK(fast.has_prompt);
  REQUIRE(fast.depends.size() == 2);  // the `if CRYPTO` block and the menu's X86
  CHECK(fast.depends[0].expr == "CRYPTO");
  CHECK(contains(fast.depends[0].where, "`if` block at Kconfig:6"));
  CHECK(fast.depends[1].expr == "X86");
  CHECK(!idx.symbols.count("NOTHING"));  // help text is not parsed as statements
  CHECK(!idx.selected_by.count("NOBODY"));
  auto& shmem = idx.symbols["SHMEM"][0];
  CHECK(shmem.prompt_if == "EXPERT");
  CHECK(!idx.symbols["HPET_TIMER"][0].has_prompt);
  CHECK(idx.symbols["SLOB"][0].in_choice);
  REQUIRE(idx.selected_by["CRYPTO"].size() == 1);
  CHECK(idx.selected_by["CRYPTO"][0].by == "BTRFS_FS");
}

TEST_CASE("Kconfig expressions evaluate as tristates", "[build][kconfig]") {
  ConfigValues c = {{"A", "y"}, {"B", "m"}, {"NR", "8"}, {"S", "\"abc\""}};
  CHECK(evaluate_kconfig_expr("A", c) == 2);
  CHECK(evaluate_kconfig_expr("B", c) == 1);
  CHECK(evaluate_kconfig_expr("UNSET", c) == 0);
  CHECK(evaluate_kconfig_expr("A && B", c) == 1);
  CHECK(evaluate_kconfig_expr("UNSET || B", c) == 1);
  CHECK(evaluate_kconfig_expr("!UNSET && (A || UNSET)", c) == 2);
  CHECK(evaluate_kconfig_expr("!A", c) == 0);
  CHECK(evaluate_kconfig_expr("NR > 4", c) == 2);
  CHECK(evaluate_kconfig_expr("NR = 4", c) == 0);
  CHECK(evaluate_kconfig_expr("S = \"abc\"", c) == 2);
  CHECK(evaluate_kconfig_expr("UNSET != y", c) == 2);
  CHECK(evaluate_kconfig_expr("$(cc-option,-mfoo)", c) == 2);  // unknown: never blamed
}

TEST_CASE("explain names the dependency that is not met and its value", "[build][kconfig]") {
  auto idx = index();
  ConfigValues config = {{"X86", "y"}, {"BLOCK", "y"}};

  auto tmpfs = explain(idx, config, "TMPFS", "y", "n");
  CHECK(contains(tmpfs, "depends on SHMEM (fs/Kconfig:6)"));
  CHECK(contains(tmpfs, "SHMEM=n"));

  auto fast = explain(idx, config, "CRYPTO_FAST", "y", "n");
  CHECK(contains(fast, "depends on CRYPTO"));
  CHECK(contains(fast, "`if` block at Kconfig:6"));
  CHECK(!contains(fast, "X86"));  // met: not blamed

  config["BLOCK"] = "n";
  auto btrfs = explain(idx, config, "BTRFS_FS", "y", "n");
  CHECK(contains(btrfs, "depends on BLOCK && (X86 || ARM)"));
  CHECK(contains(btrfs, "BLOCK=n"));
}

TEST_CASE("explain covers hidden prompts, selects, choices and typos", "[build][kconfig]") {
  auto idx = index();
  ConfigValues config = {{"X86", "y"}, {"BTRFS_FS", "y"}, {"CRYPTO", "y"}, {"SLUB", "y"}};

  CHECK(contains(explain(idx, config, "SHMEM", "y", "n"), "hidden unless EXPERT"));
  CHECK(contains(explain(idx, config, "SHMEM", "y", "n"), "EXPERT=n"));
  CHECK(contains(explain(idx, config, "CRYPTO", "n", "y"), "selected by BTRFS_FS=y"));
  CHECK(contains(explain(idx, config, "HPET_TIMER", "y", "n"), "has no prompt"));
  CHECK(contains(explain(idx, config, "SLOB", "y", "n"), "member of a choice"));
  CHECK(contains(explain(idx, config, "BTRFS", "y", "n"), "no symbol BTRFS"));
}

TEST_CASE("scan_kconfig reads only the tree's files, each once however it is spelled, and a bounded number (twelfth attack)",
          "[build][kconfig]") {
  // fs/K sources itself twice under two spellings: each level used to double the reads (2^64).
  std::vector<std::string> asked;
  auto idx = scan_kconfig([&](const std::string& path) -> std::optional<std::string> {
    asked.push_back(path);
    if (path == "Kconfig")
      return "source \"/dev/zero\"\nsource \"../../tmp/fifo\"\nsource \"fs/../../etc/x\"\nsource \"fs/K\"\n";
    if (path == "fs/K") return "rsource \"./K\"\nrsource \".//K\"\nconfig A\n\tbool \"a\"\n";
    return std::nullopt;
  });
  CHECK(asked == std::vector<std::string>{"Kconfig", "fs/K"});
  CHECK(idx.symbols.count("A") == 1);
  // A chain longer than the cap is cut at kMaxKconfigFiles files.
  size_t reads = 0;
  scan_kconfig([&](const std::string& path) -> std::optional<std::string> {
    ++reads;
    return "source \"" + path + "x\"\n";  // Kconfig sources Kconfigx, which sources Kconfigxx, ...
  });
  CHECK(reads <= 66);  // the depth limit ends a chain first
  reads = 0;
  scan_kconfig([&](const std::string& path) -> std::optional<std::string> {
    ++reads;
    std::string text;
    if (path == "Kconfig")
      for (size_t i = 0; i < ks::kernel::kMaxKconfigFiles + 100; ++i) text += "source \"k" + std::to_string(i) + "\"\n";
    return text;
  });
  CHECK(reads == ks::kernel::kMaxKconfigFiles);
}

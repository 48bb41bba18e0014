// `ksandwich trend`: nights derived from a real bundle go into a real SQLite history; a
// persistent slowdown from night 7 is named with its commit range, a flat history has none.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>

#include "history/trend.hpp"
#include "pipeline/bundle_file.hpp"
#include "stats/random.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"

using namespace ks;
namespace fs = std::filesystem;

namespace {

// Twelve nights of the real bundle, tip commit c01..c12, every workload's ratio at 1 +- 0.5%
// noise, times (1 + STEP) from night 7 on.
void fill(history::Store& store, double step) {
  auto bundle = pipeline::load_bundle(fs::path(KS_SOURCE_DIR) / "tests/data/bundles/qemu-confirm.json");
  stats::Xoshiro256 rng(11);
  for (int night = 1; night <= 12; ++night) {
    auto b = bundle;
    b.created_at = fmt::format("2026-12-{:02}T02:00:00Z", night);
    b.builds["patched"]["source"]["commit"] = fmt::format("c{:02}", night);
    b.builds["patched"]["patches"] = nlohmann::json::array();
    for (auto& w : b.analysis->workloads) {
      double ratio = std::exp(0.005 * stats::normal_draw(rng)) * (night >= 7 ? 1 + step : 1);
      w.ratio_ci = evidence::Interval{ratio, ratio * 0.99, ratio * 1.01, 0.95};
    }
    store.add(b, "night.json", fmt::format("sha-{}", night));
  }
}

}  // namespace

TEST_CASE("trend: a 4% slowdown from night 7 is one change point between c06 and c07", "[history]") {
  test::TempDir dir("ks-trend");
  history::Store store(dir.path / "h.sqlite");
  fill(store, 0.04);
  auto trend = history::trend_of(store, "default");
  REQUIRE(trend.size() == 3);  // clone, dedupe, dio-randwrite
  for (auto& t : trend) {
    CHECK(t.nights.size() == 12);
    REQUIRE(t.changes.size() == 1);
    auto& c = t.changes[0];
    CHECK(c.night == 6);
    CHECK(c.last_before.tip == "commit c06");
    CHECK(c.first_after.tip == "commit c07");
    CHECK(history::commit_range(c.last_before, c.first_after) == "git log c06..c07");
    CHECK(c.ratio_after / c.ratio_before == Approx(1.04).epsilon(0.01));
  }
  auto text = history::render_trend(trend, "text");
  CHECK(text.find("change point at night 7 (2026-12-07T02:00:00Z)") != std::string::npos);
  CHECK(text.find("git log c06..c07") != std::string::npos);
  auto md = history::render_trend(trend, "markdown");
  CHECK(md.find("| night | time | tip |") != std::string::npos);
  // A tip from a bundle cannot add cells, an image or a link to the table (thirteenth attack).
  auto forged = trend;
  forged[0].nights[0].tip = "6.1 | x | NO REGRESSION <img src=https://e.example/t.png> [click](https://e.example/)";
  auto forged_md = history::render_trend(forged, "markdown");
  CHECK(forged_md.find("<img") == std::string::npos);
  CHECK(forged_md.find("6.1 \\| x \\| NO REGRESSION &lt;img src=https://e.example/t.png> \\[click\\](https://e.example/)") !=
        std::string::npos);
  auto html = history::render_trend(trend, "html");
  CHECK(html.find("<svg class=\"ks-trend-plot\"") != std::string::npos);
  CHECK(html.find("class=\"ks-change-point\"") != std::string::npos);
  auto json = nlohmann::json::parse(history::render_trend(trend, "json"));
  CHECK(json[0]["changes"][0]["night"] == 7);  // as the text numbers it
  CHECK((text.find("(p=") != std::string::npos || text.find("(p<0.0001)") != std::string::npos));
  CHECK(text.find("p=0.000") == std::string::npos);
  CHECK_THROWS_AS(history::render_trend(trend, "pdf"), UserError);
}

TEST_CASE("trend: only the latest nights are judged, the earlier ones counted (thirty-third attack)", "[history]") {
  // Change points cost the square of the nights: 40,000 took half a minute, and Ctrl-C waited.
  test::TempDir dir("ks-trend");
  history::Store store(dir.path / "h.sqlite");
  fill(store, 0.04);
  auto trend = history::trend_of(store, "default", 1.0, 8);
  REQUIRE(trend.size() == 3);
  for (auto& t : trend) {
    CHECK(t.earlier == 4);
    REQUIRE(t.nights.size() == 8);
    CHECK(t.nights.front().tip == "commit c05");
    CHECK(t.nights.back().tip == "commit c12");
  }
  CHECK(history::render_trend(trend, "text").find("(8 nights; 4 earlier ones left out)") != std::string::npos);
  CHECK(history::trend_of(store, "default").front().earlier == 0);
  CHECK(history::kMaxNights >= 365);
}

TEST_CASE("trend: a flat history has no change point", "[history]") {
  test::TempDir dir("ks-trend");
  history::Store store(dir.path / "h.sqlite");
  fill(store, 0.0);
  auto trend = history::trend_of(store, "");
  REQUIRE(trend.size() == 3);
  for (auto& t : trend) CHECK(t.changes.empty());
  CHECK(history::render_trend(trend, "text").find("no change point") != std::string::npos);
  auto html = history::render_trend(trend, "html");
  CHECK(html.find("ks-change-point") == std::string::npos);
  CHECK(history::trend_of(store, "another experiment").empty());
}

TEST_CASE("trend: a tip that is not a commit id gets no git command, and no field of a bundle starts a line (seventh attack)",
          "[history]") {
  history::Night a, b;
  a.tip = "commit $(touch${IFS}/tmp/pwn)3";
  b.tip = "commit 0123abcd";
  CHECK(history::commit_range(a, b).find("git log") == std::string::npos);
  a.tip = "commit 89ab\nchange point at night 2";
  CHECK(history::commit_range(a, b).find('\n') == std::string::npos);
  a.tip = "commit 89ab";
  CHECK(history::commit_range(a, b) == "git log 89ab..0123abcd");
}

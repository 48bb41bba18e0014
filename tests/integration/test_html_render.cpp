// The HTML report in a real browser: Debian's headless Chromium parses the sample bundle's
// report (with a hostile experiment name), the DOM must keep the plots and tables and hold
// no script element, and the screenshot must show the plots, not a blank page.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "proc/runner.hpp"
#include "report/report.hpp"
#include "support/skip.hpp"
#include "unit/report/report_test_util.hpp"
#include "unit/report/sample_bundle.hpp"
#include "util/files.hpp"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ks::test::count_of;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "ksandwich-html-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

std::optional<fs::path> find_chromium() {
  for (const char* name : {"chromium", "chromium-browser"})
    if (auto path = ks::proc::find_program(name)) return path;
  return std::nullopt;
}

// One headless run with a fresh profile; nothing reaches the network or the user's home.
ks::proc::Result chromium(const fs::path& exe, const TempDir& dir, const std::string& mode,
                          const fs::path& page) {
  static int runs = 0;
  fs::path profile = dir.path / ("profile-" + std::to_string(++runs));
  ks::proc::Command cmd;
  cmd.argv = {exe.string(),
              "--headless",
              "--no-sandbox",
              "--disable-gpu",
              "--disable-quic",
              "--no-first-run",
              "--disable-background-networking",
              "--disable-component-update",
              "--disable-sync",
              "--user-data-dir=" + profile.string(),
              mode,
              "--window-size=1200,1600",
              "file://" + page.string()};
  cmd.env = {{"HOME", dir.path.string()},
             {"XDG_CONFIG_HOME", (dir.path / "config").string()},
             {"XDG_CACHE_HOME", (dir.path / "cache").string()}};
  cmd.timeout = std::chrono::seconds(180);
  return ks::proc::run(cmd);
}

// Inflates the PNG's IDAT, undoes the row filters and reports: width height
// distinct-colours control-colour-pixels patched-colour-pixels.
constexpr const char* kPngSummary = R"py(
import sys, zlib, struct
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
pos, idat = 8, []
while pos < len(data):
    n, = struct.unpack('>I', data[pos:pos + 4]); kind = data[pos + 4:pos + 8]
    body = data[pos + 8:pos + 8 + n]; pos += 12 + n
    if kind == b'IHDR': w, h, depth, ctype, _, _, interlace = struct.unpack('>IIBBBBB', body)
    elif kind == b'IDAT': idat.append(body)
assert depth == 8 and interlace == 0 and ctype in (2, 6), (depth, ctype, interlace)
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(b''.join(idat)), w * bpp
prev, counts, i = bytearray(stride), {}, 0
for y in range(h):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    if f == 2: line = bytearray((a + b) & 255 for a, b in zip(line, prev))
    elif f:
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0; b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
            if f == 1: line[x] = (line[x] + a) & 255
            elif f == 3: line[x] = (line[x] + ((a + b) >> 1)) & 255
            else:
                p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        px = bytes(line[x:x + 3]); counts[px] = counts.get(px, 0) + 1
    prev = line
print(w, h, len(counts), counts.get(bytes((0x2f, 0x6d, 0xb5)), 0), counts.get(bytes((0xe0, 0x69, 0x2a)), 0))
)py";

}  // namespace

TEST_CASE("html report renders in headless Chromium with its plots and tables") {
  auto exe = find_chromium();
  KS_SKIP_UNLESS(exe,
                 "chromium is not installed (apt-get install --no-install-recommends chromium)");
  KS_SKIP_UNLESS(ks::proc::have_program("python3"), "python3 is needed to decode the screenshot");

  TempDir dir;
  auto bundle = ks::test::make_sample_bundle();
  bundle.experiment_name = "remap <script>document.title='owned'</script>";
  fs::path page = dir.path / "report.html";
  ks::write_file_atomic(page, ks::report::html(bundle));

  // The DOM after a real parse: the plots and tables are there, the name stayed text.
  auto dom = chromium(*exe, dir, "--dump-dom", page);
  INFO(dom.describe());
  REQUIRE(dom.ok());
  CHECK(count_of(dom.out, "<svg class=\"ks-plot\" data-workload=\"clone\"") == 1);
  CHECK(count_of(dom.out, "<svg class=\"ks-plot\" data-workload=\"dedupe\"") == 1);
  CHECK(count_of(dom.out, "<circle class=\"ks-round\"") == 90);
  CHECK(count_of(dom.out, "<table class=\"ks-table ks-sandwich\"") == 1);
  CHECK(count_of(dom.out, "<p class=\"ks-verdict ks-v-improvement\">") == 2);
  CHECK_THAT(dom.out, !Contains("<script"));
  CHECK_THAT(dom.out, Contains("remap &lt;script&gt;document.title='owned'&lt;/script&gt;"));
  CHECK_THAT(dom.out, Contains("<td class=\"num\">2943.790</td>"));

  // The screenshot: a valid 1200x1600 PNG with many colours, among them both arm colours
  // (the plots were drawn).
  fs::path png = dir.path / "report.png";
  auto shot = chromium(*exe, dir, "--screenshot=" + png.string(), page);
  INFO(shot.describe());
  REQUIRE(shot.ok());
  REQUIRE(fs::exists(png));
  CHECK(fs::file_size(png) > 20'000);
  std::string head = ks::read_file(png).substr(0, 24);
  REQUIRE(head.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
  auto be32 = [&](size_t at) {
    return (uint32_t(uint8_t(head[at])) << 24) | (uint32_t(uint8_t(head[at + 1])) << 16) |
           (uint32_t(uint8_t(head[at + 2])) << 8) | uint32_t(uint8_t(head[at + 3]));
  };
  CHECK(be32(16) == 1200);
  CHECK(be32(20) == 1600);

  ks::proc::Command python;
  python.argv = {"python3", "-c", kPngSummary, png.string()};
  python.timeout = std::chrono::seconds(300);
  auto summary = ks::proc::run(python);
  INFO(summary.describe());
  REQUIRE(summary.ok());
  std::istringstream in(summary.out);
  uint64_t width = 0, height = 0, colours = 0, control = 0, patched = 0;
  in >> width >> height >> colours >> control >> patched;
  CHECK(width == 1200);
  CHECK(height == 1600);
  CHECK(colours > 100);  // a blank page has one
  CHECK(control > 200);  // control dots and mean segments
  CHECK(patched > 200);  // patched dots and mean segments
}

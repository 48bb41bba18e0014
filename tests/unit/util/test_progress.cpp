// The shared progress line: ETA arithmetic, the counts, and the two renderings (a
// terminal's rewritten line, a log's throttled plain lines) under an injected clock.
#include <catch2/catch.hpp>
#include <string>

#include "support/memory_stream.hpp"
#include "util/progress.hpp"

namespace progress = ks::progress;

namespace {

// What a Line wrote, read back from memory, and the clock it reads.
struct Captured : ks::test::MemoryStream {
  double now = 0;  // the injected clock, in seconds

  progress::LineOptions options(bool live) {
    progress::LineOptions o;
    o.out = file;
    o.live = live;
    o.now = [this] { return now; };
    o.width = 40;
    return o;
  }
};

}  // namespace

TEST_CASE("progress: durations read like a person would say them") {
  CHECK(progress::format_duration(0) == "0s");
  CHECK(progress::format_duration(59.4) == "59s");
  CHECK(progress::format_duration(521) == "8m41s");
  CHECK(progress::format_duration(3720) == "1h02m");
}

TEST_CASE("progress: the ETA is the rate so far applied to what is left") {
  // 300 of 1200 files in 60 s: 900 left at 5 files/s.
  REQUIRE(progress::eta_seconds(300, 1200, 60));
  CHECK(*progress::eta_seconds(300, 1200, 60) == Approx(180));
  CHECK(*progress::eta_seconds(1, 3, 40) == Approx(80));  // one point of three took 40 s
  // No rate yet, no time yet, or the estimated total already passed: no ETA at all.
  CHECK_FALSE(progress::eta_seconds(0, 1200, 60));
  CHECK_FALSE(progress::eta_seconds(10, 1200, 0));
  CHECK_FALSE(progress::eta_seconds(1200, 1200, 60));
  CHECK_FALSE(progress::eta_seconds(1300, 1200, 60));
  CHECK(progress::eta_suffix(std::nullopt).empty());
  CHECK(progress::eta_suffix(190.0) == " ETA 3m10s");
}

TEST_CASE("progress: counts say done of planned, and 'up to' for a cap") {
  CHECK(progress::count_status(1, 3, "points", false, 80.0) == "1 of 3 points done, ETA 1m20s");
  CHECK(progress::count_status(0, 3, "points", false, std::nullopt) == "0 of 3 points done");
  CHECK(progress::count_status(2, 24, "points", true, 2400.0) == "2 of up to 24 points done, at most 40m00s left");
}

TEST_CASE("progress: a status too wide for the terminal is cut, not wrapped") {
  CHECK(progress::fit("short", 40) == "short");
  CHECK(progress::fit("0123456789", 8) == "01234...");
  CHECK(progress::fit("0123456789", 0) == "0123456789");
}

TEST_CASE("progress: in a log, a plain line every log_interval_s at most, and each milestone") {
  Captured c;
  {
    progress::Line line(c.options(false));
    CHECK_FALSE(line.live());
    line.show("[control] build", true);        // t = 0: printed
    c.now = 1;
    line.show("[control] build 1s  3 files");  // within 10 s: not printed
    c.now = 9.9;
    line.show("[control] build 10s  30 files");
    c.now = 10.5;
    line.show("[control] build 11s  33 files");  // 10.5 s after the last line: printed
    c.now = 11;
    line.show("[control] link", true);  // a new phase: printed at once
    line.show("[control] link", true);  // the same text again: not
    line.note("[control] built");
  }
  CHECK(c.text() ==
        "[control] build\n"
        "[control] build 11s  33 files\n"
        "[control] link\n"
        "[control] built\n");
}

TEST_CASE("progress: on a terminal, one line rewritten in place and erased before a note") {
  Captured c;
  {
    progress::Line line(c.options(true));
    CHECK(line.live());
    line.show("[point 1/3 control] booting", true);
    c.now = 0.1;
    line.show("[point 1/3 control] mkfs");  // within live_interval_s: skipped
    c.now = 0.5;
    line.show("[point 1/3 control] workload 1 of 2: clone, round 3 of 8 | 0 of 3 points done");
    line.note("[point 1/3 control] ok in 40.1 s");
  }  // the destructor leaves no status line behind (there is none open now)
  CHECK(c.text() ==
        "\r\033[K[point 1/3 control] booting"
        "\r\033[K[point 1/3 control] workload 1 of 2:..."  // cut to 39 of the 40 columns
        "\r\033[K[point 1/3 control] ok in 40.1 s\n");
}

TEST_CASE("progress: a terminal's status line still open is erased when the line ends") {
  Captured c;
  {
    progress::Line line(c.options(true));
    line.show("[control] build 3m12s", true);
  }
  CHECK(c.text() == "\r\033[K[control] build 3m12s\r\033[K");
}

TEST_CASE("progress: a silent line prints nothing") {
  auto line = progress::Line::silent();
  line.show("anything", true);
  line.note("anything");
  CHECK_FALSE(line.live());
}

TEST_CASE("progress: a guest console's escape sequences never reach the terminal") {
  // Twenty-sixth attack: a point's failure quotes the guest console, which a kernel built from
  // anyone's patch writes; a status may hold a build's words.
  Captured c;
  {
    progress::Line line(c.options(false));
    line.show("[point 1/3 control] \x1b]0;pwned\x07 booting", true);
    line.note("[point 1/3 control] failed: guest kernel panicked: \x1b[2J\xc2\x9b" "31m\r");
  }
  CHECK(c.text() ==
        "[point 1/3 control]  ]0;pwned  booting\n"
        "[point 1/3 control] failed: guest kernel panicked:  [2J 31m \n");
}

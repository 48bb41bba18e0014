#!/usr/bin/env bash
# Prints the ten slowest tests of the ctest run that is ending: ctest runs it after the
# tests (CTEST_CUSTOM_POST_TEST, tests/CTestCustom.cmake.in) with the build directory, and
# it reads that run's log. It only prints, and always exits 0: the run's verdict is ctest's.
#   tools/slowest-tests.sh BUILD_DIR [COUNT]
dir=${1:-build}
count=${2:-10}
log=$dir/Testing/Temporary/LastTest.log.tmp   # the log of the run still ending
[ -f "$log" ] || log=$dir/Testing/Temporary/LastTest.log
[ -f "$log" ] || exit 0
# "N/M Test: NAME" opens a test; the first "Test time = S sec" after its output closes it.
awk '
  /^[0-9]+\/[0-9]+ Test: / { name = $0; sub(/^[0-9]+\/[0-9]+ Test: /, "", name); open = 1; next }
  open && /^Test time = +[0-9.]+ sec$/ { printf "%s\t%s\n", $4, name; open = 0; total += $4 }
  END { if (total > 0) printf "%s\t(all tests together)\n", total }
' "$log" | sort -t$'\t' -k1,1 -g -r | awk -F'\t' -v n="$count" '
  $2 == "(all tests together)" { all = $1; next }
  shown < n { lines[++shown] = sprintf("%9.1f s  %s", $1, $2) }
  END {
    if (shown == 0) exit
    printf "\nThe %d slowest tests of this run (%.0f s of tests in all):\n", shown, all
    for (i = 1; i <= shown; ++i) print lines[i]
  }'
exit 0

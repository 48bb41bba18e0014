#!/usr/bin/env bash
# The systemd units of a lab machine's nightly job: the timer starts the service, the service
# runs tools/nightly/ksandwich-nightly.sh, and that script works: here in --dry-run mode on a
# host experiment, which prints the plan and what it would record and writes nothing.
set -u
ks="$KS_BINARY_DIR/bin/ksandwich"
dir="$KS_SOURCE_DIR/tools/nightly"
[ -x "$ks" ] || { echo "SKIP: $ks is not built"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

grep -q '^OnCalendar=' "$dir/ksandwich-nightly.timer" || fail "timer has no OnCalendar"
exec_start=$(sed -n 's/^ExecStart=//p' "$dir/ksandwich-nightly.service")
[ -x "$KS_SOURCE_DIR/tools/nightly/$(basename "$exec_start")" ] || fail "ExecStart $exec_start is not tools/nightly's script"
grep -q '^SuccessExitStatus=4$' "$dir/ksandwich-nightly.service" || fail "an INCONCLUSIVE night would fail the unit"
if command -v systemd-analyze >/dev/null; then
  # verify needs the ExecStart path to exist: point a copy at the repository's script.
  sed "s|^ExecStart=.*|ExecStart=$dir/ksandwich-nightly.sh|" "$dir/ksandwich-nightly.service" >"$tmp/ksandwich-nightly.service"
  cp "$dir/ksandwich-nightly.timer" "$tmp/"
  out=$(systemd-analyze verify "$tmp/ksandwich-nightly.service" "$tmp/ksandwich-nightly.timer" 2>&1) ||
    fail "systemd-analyze verify: $out"
else
  echo "note: systemd-analyze not installed; the units' syntax was not verified"
fi

out=$(KSANDWICH="$ks" KSANDWICH_EXPERIMENT="$KS_SOURCE_DIR/configs/experiments/host-aa.json" \
  KSANDWICH_HISTORY="$tmp/history.sqlite" KSANDWICH_RESULTS="$tmp/results" \
  "$dir/ksandwich-nightly.sh" --dry-run 2>&1)
code=$?
[ "$code" -eq 0 ] || fail "dry run exited $code: $out"
grep -q "nightly: would add $tmp/results/nightly-.*/bundle.json to the history $tmp/history.sqlite" <<<"$out" ||
  fail "dry run did not say what it would record: $out"
[ ! -e "$tmp/history.sqlite" ] || fail "dry run created the history"
[ ! -e "$tmp/results" ] || fail "dry run created the results directory"
out=$("$dir/ksandwich-nightly.sh" --bogus 2>&1)
[ $? -eq 2 ] || fail "an unknown option did not exit 2: $out"

[ "$failures" -eq 0 ] && echo "ok: nightly units and script (dry run)"
exit $((failures > 0))

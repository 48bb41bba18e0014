#!/usr/bin/env bash
# The nightly commands end to end on a real bundle (tests/data/bundles/qemu-confirm.json):
# compare refuses another machine (exit 2) unless --allow-environment-change; history add,
# list and show on a real SQLite file, refusing a tampered bundle (exit 2); trend in every
# format; junit XML.
set -u
ks="$KS_BINARY_DIR/bin/ksandwich"
[ -x "$ks" ] || { echo "SKIP: $ks is not built"; exit 77; }
command -v jq >/dev/null || { echo "SKIP: jq is not installed"; exit 77; }
bundle="$KS_SOURCE_DIR/tests/data/bundles/qemu-confirm.json"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

# expect CODE NAME TEXT -- COMMAND...: COMMAND exits CODE and prints TEXT (stdout or stderr).
expect() {
  local code=$1 name=$2 text=$3
  shift 4
  local out got
  out=$("$@" 2>&1)
  got=$?
  if [ "$got" -ne "$code" ]; then fail "$name: exit $got, expected $code: $(head -c 600 <<<"$out")"
  elif ! grep -qF -- "$text" <<<"$out"; then fail "$name: output lacks '$text': $(head -c 600 <<<"$out")"
  else echo "ok   $name"; fi
}

# Another machine's run, later (a copy with the same creation time is one run: refused).
jq '.machine.cpu_model = "AMD EPYC 7763 64-Core Processor" | .created_at = "2026-12-04T02:00:00Z"' "$bundle" >"$tmp/other-machine.json"
expect 2 "compare refuses another CPU" "CPU model: 'Intel(R) Xeon(R) Processor' in A, 'AMD EPYC 7763 64-Core Processor' in B" \
  -- "$ks" compare "$bundle" "$tmp/other-machine.json"
out=$("$ks" compare "$bundle" "$tmp/other-machine.json" --allow-environment-change 2>&1)
code=$?
if [ "$code" -eq 2 ]; then fail "compare --allow-environment-change exited 2: $out"
elif ! changed=$(grep -n -m1 'Environment changed between A and B' <<<"$out" | cut -d: -f1) ||
     [ "$changed" -ge "$(grep -n -m1 'Backend' <<<"$out" | cut -d: -f1)" ]; then
  fail "compare --allow-environment-change: the change is not above the header: $(head -c 600 <<<"$out")"
else echo "ok   compare --allow-environment-change puts the change first (exit $code)"; fi

db="$tmp/history.sqlite"
expect 0 "history add" "added as run 1" -- "$ks" history add --history "$db" "$bundle"
expect 0 "history add, again" "already in the history as run 1" -- "$ks" history add --history "$db" "$bundle"
gzip -c "$bundle" >"$tmp/bundle.json.gz"
expect 0 "history add, the same run compressed" "already in the history as run 1" -- \
  "$ks" history add --history "$db" "$tmp/bundle.json.gz"
# Seventy-first attack: the same run as other bytes was a second night in trend's statistics.
jq -c . "$bundle" >"$tmp/reindented.json"
expect 2 "history add refuses the same run as another file" "this history holds run 1 already" -- \
  "$ks" history add --history "$db" "$tmp/reindented.json"
# And a run filed under another experiment's name is no valid bundle at all.
jq '.experiment_name = "nightly-other"' "$bundle" >"$tmp/renamed.json"
expect 2 "history add refuses a bundle named otherwise than its experiment" "/experiment_name" -- \
  "$ks" history add --history "$db" "$tmp/renamed.json"
jq '.rows[5].ns_per_op *= 3' "$bundle" >"$tmp/tampered.json"
expect 2 "history add refuses a tampered bundle" "is not a valid bundle" -- "$ks" history add --history "$db" "$tmp/tampered.json"
# Thirty-seventh attack: a killed run's bundle (an analysis of the points it ran) entered the
# history as a night, and analyze exited 0 on it.
jq '.points[-1].status = "pending" | .points[-1].id as $p | .rows |= map(select(.point != $p))' "$bundle" >"$tmp/cut.json"
expect 4 "analyze: a run with a point still to run is no decision" "" -- "$ks" analyze "$tmp/cut.json" --out "$tmp/cut-judged.json"
expect 2 "history add refuses a run that did not finish" "did not finish" -- "$ks" history add --history "$db" "$tmp/cut-judged.json"
expect 0 "history list" "INCONCLUSIVE" -- "$ks" history list --history "$db"
expect 0 "history show" "clone" -- "$ks" history show --history "$db" 1
expect 2 "history show, no such run" "the history has no run 7" -- "$ks" history show --history "$db" 7
[ "$("$ks" history list --history "$db" --json | jq length)" = 1 ] || fail "history list --json: not one run"
[ "$(sqlite3 "$db" 'PRAGMA user_version; PRAGMA integrity_check;' | tr '\n' ' ')" = "2 ok " ] ||
  fail "schema version or integrity"
echo "not sqlite" >"$tmp/text.sqlite"
expect 2 "history refuses a file that is not a history" "is not a ksandwich history" -- "$ks" history list --history "$tmp/text.sqlite"
expect 2 "history list refuses a missing file and does not create it" "does not exist" -- \
  "$ks" history list --history "$tmp/missing.sqlite"
[ ! -e "$tmp/missing.sqlite" ] || fail "history list created the file it was told to read"
: >"$tmp/empty.sqlite"
for read in "history list" "trend"; do
  # shellcheck disable=SC2086
  expect 2 "$read refuses an empty file and writes nothing into it" "is not a ksandwich history" -- \
    "$ks" $read --history "$tmp/empty.sqlite"
  [ ! -s "$tmp/empty.sqlite" ] || fail "$read wrote into the empty file it was given"
done

for format in text markdown html json; do
  expect 0 "trend --format $format" "clone" -- "$ks" trend --history "$db" --format "$format"
done
expect 0 "junit" '<testcase classname="ksandwich.default" name="clone"><skipped' -- "$ks" junit "$bundle"
# Twenty-sixth attack: a machine named with a direction mark and a C1 control (an 8-bit
# terminal's ESC [) in a stranger's bundle; JSON on a terminal holds them as \u escapes.
jq '.machine.cpu_model = "Xeon \u202eesrever\u009b2J" | .created_at = "2026-12-04T03:00:00Z"' "$bundle" >"$tmp/bidi.json"
# Sixty-sixth: another machine's night of the same experiment is refused; a history of its own.
expect 2 "history add, another machine's run of the experiment" "were measured on another machine (Intel(R) Xeon(R) Processor, 2 cores)" -- \
  "$ks" history add --history "$db" "$tmp/bidi.json"
expect 0 "history add, a machine named with a direction mark" "added as run 1" -- "$ks" history add --history "$tmp/bidi.sqlite" "$tmp/bidi.json"
out=$("$ks" history list --history "$tmp/bidi.sqlite" --json)
if LC_ALL=C grep -q $'[\x80-\xff]' <<<"$out"; then fail "history list --json printed raw non-ASCII: $(cat -v <<<"$out" | grep -m1 esrever)"
elif ! jq -e 'map(.machine) | any(contains("\u202eesrever\u009b2J"))' <<<"$out" >/dev/null; then fail "history list --json lost the machine's name: $out"
else echo "ok   history list --json escapes a stranger's direction marks"; fi

# A history someone else made (issue 27): its runs table a view over an endless recursive
# query; fifty-third attack: a history whose workloads are one (history list read only runs,
# trend and history show spun until killed), or that holds a trigger; fifty-fourth: a trigger
# stored as type 'TRIGGER' (SQLite goes by its SQL), a generated column costing seconds a row.
# Refused at once, exit 2: only the schema ksandwich makes is read.
python3 - "$tmp/endless.sqlite" <<'PY'
import sqlite3, sys
cols = ("experiment created_at added_at backend control_source patched_source machine_fingerprint machine "
        "tool_version tool_revision verdict bundle_path bundle_sha256 clock").split()
c = sqlite3.connect(sys.argv[1])
c.execute("PRAGMA user_version=2")
c.execute("CREATE VIEW runs AS WITH RECURSIVE r(id) AS (SELECT 1 UNION ALL SELECT id+1 FROM r) SELECT id, " +
          ", ".join(f"'x' AS {x}" for x in cols) + " FROM r WHERE id = 0")
c.execute("CREATE TABLE workloads (run_id INTEGER, workload TEXT, metric TEXT, ratio REAL, ratio_low REAL, "
          "ratio_high REAL, level REAL, mde_pct REAL, verdict TEXT, material INTEGER)")
c.commit()
PY
cp "$db" "$tmp/endless-workloads.sqlite"
cp "$db" "$tmp/trigger.sqlite"
cp "$db" "$tmp/trigger-upper.sqlite"
cp "$db" "$tmp/generated.sqlite"
python3 - "$tmp/endless-workloads.sqlite" "$tmp/trigger.sqlite" "$tmp/trigger-upper.sqlite" "$tmp/generated.sqlite" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.executescript("ALTER TABLE workloads RENAME TO w_real; CREATE VIEW workloads AS WITH RECURSIVE c(x) AS "
                "(SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT w.* FROM w_real w, c")
for f in sys.argv[2:4]:
    c = sqlite3.connect(f)
    c.executescript("CREATE TRIGGER t AFTER INSERT ON runs BEGIN UPDATE runs SET verdict = 'NO_CHANGE'; END")
c.executescript("PRAGMA writable_schema = ON; UPDATE sqlite_master SET type = 'TRIGGER' WHERE name = 't'")
c.commit()
c = sqlite3.connect(sys.argv[4])
c.executescript("ALTER TABLE runs ADD COLUMN slow TEXT GENERATED ALWAYS AS (hex(zeroblob(1000000 + length(verdict)))) VIRTUAL")
PY
for file in endless endless-workloads trigger trigger-upper generated; do
  for read in "history list" "history show 1" "trend"; do
    # shellcheck disable=SC2086
    expect 2 "$read refuses the history $file.sqlite" "its schema is not the one ksandwich makes" -- \
      timeout -k 5 20 "$ks" $read --history "$tmp/$file.sqlite"
  done
done

# Seventh attack: a history another user can change is not read by root (its rows name the
# bundles root would read, and SQLite runs its views); invalid UTF-8 in one of root's own is
# printed as JSON with replacement characters, not an internal error.
if [ "$(id -u)" -eq 0 ]; then
  mkdir "$tmp/theirs" && cp "$db" "$tmp/theirs/h.sqlite" && chown -R nobody "$tmp/theirs"
  for read in "history list" "trend"; do
    # shellcheck disable=SC2086
    expect 2 "$read refuses a history another user owns" "belongs to uid" -- "$ks" $read --history "$tmp/theirs/h.sqlite"
  done
  # Eighth attack: root's own history in a directory others may write to (sticky /tmp): SQLite
  # would roll a journal someone planted beside it into the file.
  mkdir "$tmp/shared" && chmod 1777 "$tmp/shared" && cp "$db" "$tmp/shared/h.sqlite"
  expect 2 "history list refuses a history in a directory others may write to" "lets others write in it" -- \
    "$ks" history list --history "$tmp/shared/h.sqlite"
else
  echo "SKIPPED (part): a history another user owns needs root (chown)"
fi
cp "$db" "$tmp/bad-utf8.sqlite"
python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("UPDATE runs SET experiment = CAST(X'"'"'64656661756c74ff'"'"' AS TEXT)"); c.commit()' "$tmp/bad-utf8.sqlite"
expect 0 "history list --json with invalid UTF-8 in a field" "default" -- "$ks" history list --history "$tmp/bad-utf8.sqlite" --json

[ "$failures" -eq 0 ] && echo "ok: history, trend, junit and compare's environment check"
exit $((failures > 0))

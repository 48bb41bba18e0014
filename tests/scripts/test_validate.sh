#!/usr/bin/env bash
# `ksandwich validate` on real bundles (tests/data/bundles): exit 0 and {"valid": true} for
# an untouched one; exit 2 naming the field for a tampered one; schema failures named; the
# JSON parses with jq; the compiled-in schema is used (the source tree's copy hidden, as
# root); `report` refuses a bundle that fails its schema with exit 2; `analyze` re-judges one.
set -u
ks="$KS_BINARY_DIR/bin/ksandwich"
data="$KS_SOURCE_DIR/tests/data/bundles"
for need in jq /usr/bin/python3; do
  command -v "$need" >/dev/null || { echo "SKIPPED: $need is not installed"; exit 77; }
done
/usr/bin/python3 -c 'import jsonschema' 2>/dev/null ||
  { echo "SKIPPED: python3-jsonschema is not installed (tools/setup.sh installs it)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }

# validate_json NAME EXPECTED_EXIT JQ_FILTER BUNDLE: the JSON output satisfies the filter.
validate_json() {
  local name=$1 want=$2 filter=$3 bundle=$4 out code
  out=$("$ks" validate --format json "$bundle" 2>"$tmp/stderr")
  code=$?
  if [ "$code" -ne "$want" ]; then fail "$name: exit $code, expected $want; $(cat "$tmp/stderr")"
  elif ! jq -e "$filter" <<<"$out" >/dev/null; then fail "$name: output fails jq -e '$filter': $out"
  else ok "$name"; fi
}

for b in host-screen host-confirm; do
  validate_json "$b as written validates (if not: the analysis changed; see tests/data/bundles/README.md)" \
    0 '.valid == true and .schema_errors == [] and .recomputed_mismatches == []' "$data/$b.json"
done
out=$("$ks" validate "$data/host-screen.json" 2>&1) && grep -q "valid" <<<"$out" &&
  ok "text format: $out" || fail "text format: $out"

# tamper NAME JQ_EDIT PATH: the edit is caught, and PATH is among the mismatches.
tamper() {
  local name=$1 edit=$2 path=$3
  jq "$edit" "$data/host-confirm.json" >"$tmp/t.json"
  validate_json "tampered: $name" 2 \
    ".valid == false and .schema_errors == [] and (.recomputed_mismatches | map(.path) | index(\"$path\") != null)" \
    "$tmp/t.json"
}
tamper "a gate flipped" '.analysis.gates[0].passed = false' '/analysis/gates[point_failed: experiment]/passed'
tamper "delta_pct_skip_first" '.analysis.workloads[0].delta_pct_skip_first += 1' /analysis/workloads/0/delta_pct_skip_first
tamper "an sd field" '.analysis.workloads[0].sd_log_ratio *= 1.1' /analysis/workloads/0/sd_log_ratio
tamper "the verdict" '.verdict = "NO_CHANGE"' /verdict
tamper "a workload verdict" '.analysis.workloads[0].verdict = "REGRESSION" | .analysis.workloads[0].material = true' "(exit code)"
out=$("$ks" validate "$tmp/t.json" 2>&1)
code=$?
[ "$code" -eq 2 ] && grep -qF '/analysis/workloads/0/verdict: the bundle says "REGRESSION", the raw data give "INCONCLUSIVE"' <<<"$out" &&
  ok "text format names the field and both values" || fail "text format (exit $code): $out"

jq '.rows[0].ops = -5 | .schema_version = "one"' "$data/host-screen.json" >"$tmp/bad-schema.json"
validate_json "schema failures are listed with their paths" 2 \
  '.valid == false and (.schema_errors | map(.path) | index("/rows/0/ops") != null and index("/schema_version") != null)' \
  "$tmp/bad-schema.json"
out=$("$ks" report "$tmp/bad-schema.json" 2>&1)
code=$?
[ "$code" -eq 2 ] && grep -q "does not match the bundle schema" <<<"$out" && grep -q "/rows/0/ops" <<<"$out" &&
  ok "report refuses a schema-invalid bundle: $(grep error <<<"$out" | head -n1)" ||
  fail "report of a schema-invalid bundle: exit $code: $out"
"$ks" report "$data/host-screen.json" >/dev/null 2>&1 && ok "report renders a valid bundle" ||
  fail "report of a valid bundle failed"

# Issue 27, third attack: a plan point of no arm and a date that is none were valid.
jq '.plan.points[0].arm = "bogus" | .created_at = "not a date"' "$data/host-confirm.json" >"$tmp/bad-plan.json"
validate_json "a plan point's arm and the run's date are checked" 2 \
  '.valid == false and (.schema_errors | map(.path) | index("/plan/points/0/arm") != null and index("/created_at") != null)' \
  "$tmp/bad-plan.json"

# Pass 52: a date of month 99 matched the digits, and a history sorted it after every night.
jq '.created_at = "9999-99-99T99:99:99Z"' "$data/host-confirm.json" >"$tmp/bad-date.json"
validate_json "a date past any calendar is refused" 2 \
  '.valid == false and (.schema_errors | map(.path) | index("/created_at") != null)' "$tmp/bad-date.json"

printf '{"schema_version": 1, "verdict": "OK", "verdict": "INVALID"}' >"$tmp/dup.json"
validate_json "a duplicate key is refused, not silently read" 2 '.valid == false and (.schema_errors | length) > 0' "$tmp/dup.json"

# Twenty-first attack: validate called "valid" what every other reader refuses, and spent
# 50 s and 3.7 GB on the 30,000 points they refuse at once.
jq '.builds.audit[0].field = "Verdict: NO_CHANGE"' "$data/qemu-confirm.json" >"$tmp/audit-verdict.json"
validate_json "an audit field that reads as a verdict is refused, as report refuses it" 2 \
  '.valid == false and (.schema_errors[0].message | contains("the audit field"))' "$tmp/audit-verdict.json"
# Twenty-second: that refusal quotes 80 bytes of the name, cut inside a character; the JSON
# output was not UTF-8 and validate exited 70.
jq '.rows |= map(.workload = ("a" * 79 + "\u26c4"))' "$data/host-confirm.json" >"$tmp/cut-name.json"
validate_json "a refused name cut inside a character: JSON output, exit 2" 2 \
  '.valid == false and (.schema_errors[0].message | contains("the workload"))' "$tmp/cut-name.json"
# Twenty-second: compare's and history add's refusals quoted bundle fields with their newlines.
jq '.machine.cpu_model += "\nVerdict: NO_CHANGE forged"' "$data/host-screen.json" >"$tmp/cpu-line.json"
jq '.analysis.gates[0].scope = "x\nVerdict: NO_CHANGE forged"' "$data/host-screen.json" >"$tmp/scope-line.json"
"$ks" compare "$data/host-screen.json" "$tmp/cpu-line.json" >/dev/null 2>"$tmp/compare.err"
"$ks" history add "$tmp/scope-line.json" --history "$tmp/h.sqlite" >/dev/null 2>"$tmp/history.err"
if grep -q "^Verdict" "$tmp/compare.err" "$tmp/history.err" || ! grep -q "forged" "$tmp/compare.err" ||
  ! grep -q "forged" "$tmp/history.err"; then
  fail "compare and history add quote a bundle's field on one line: $(cat "$tmp/compare.err" "$tmp/history.err")"
else ok "compare and history add quote a bundle's field on one line"; fi
jq '.points = [range(3000) as $i | .points[0]]' "$data/qemu-confirm.json" >"$tmp/many-points.json"
validate_json "3,000 points are refused before the schema is checked" 2 \
  '.valid == false and (.schema_errors | length) == 1 and (.schema_errors[0].message | contains("holds 3000 points"))' \
  "$tmp/many-points.json"

# Issue 27, eleventh attack: what validate says about a field quotes the bundle; it reaches the
# terminal as one line with no control characters (ESC, BEL, CR, LF could forge "valid").
jq '.experiment.direct_hits[0].function = "x\u001b]0;owned\u0007\u001b[2K\rvalid: bundle checks out\nok"' \
  "$data/qemu-confirm.json" >"$tmp/forged.json"
"$ks" validate "$tmp/forged.json" >/dev/null 2>"$tmp/forged.err"
code=$?
if [ "$code" -eq 2 ] && ! LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$tmp/forged.err" && ! grep -q '^valid' "$tmp/forged.err" &&
   grep -q 'invalid: .*x \]0;owned' "$tmp/forged.err"; then
  ok "validate prints a bundle's text on one line, without control characters"
else
  fail "validate of a forged function name (exit $code): $(cat -A "$tmp/forged.err" | head -5)"
fi

# Issue 27, twelfth attack: the schema check ran `python3 -c` in the current directory, which
# Python searches first: a jsonschema.py planted where root stands ran as root.
mkdir "$tmp/cwd"
printf 'open("%s/planted-ran", "w").write("yes")\nraise ImportError\n' "$tmp" >"$tmp/cwd/jsonschema.py"
cp "$tmp/cwd/jsonschema.py" "$tmp/cwd/json.py"
(cd "$tmp/cwd" && "$ks" validate "$data/host-screen.json" >/dev/null 2>&1)
code=$?
if [ "$code" -eq 0 ] && [ ! -e "$tmp/planted-ran" ]; then
  ok "the schema check imports nothing from the current directory"
else
  fail "validate from a directory holding jsonschema.py: exit $code, planted module ran: $([ -e "$tmp/planted-ran" ] && echo yes || echo no)"
fi

# `analyze` judges a bundle again: a flipped verdict is named and put right, the exit code is
# the one the run had (4: host-confirm is INCONCLUSIVE), and --out writes a bundle that validates.
jq '.verdict = "NO_CHANGE" | .analysis.verdict = "NO_CHANGE"' "$data/host-confirm.json" >"$tmp/flipped.json"
"$ks" analyze "$tmp/flipped.json" --out "$tmp/rejudged.json" >"$tmp/analyze.out" 2>"$tmp/analyze.err"
code=$?
if [ "$code" -eq 4 ] && grep -qF '/verdict: the bundle says "NO_CHANGE", the raw data give "INCONCLUSIVE"' "$tmp/analyze.err" &&
   grep -q "INCONCLUSIVE" "$tmp/analyze.out" && [ "$(jq -r .verdict "$tmp/rejudged.json")" = INCONCLUSIVE ]; then
  ok "analyze names the flipped verdict, exits 4 as the run did, writes the re-judged bundle"
else
  fail "analyze (exit $code): $(cat "$tmp/analyze.err")"
fi
validate_json "the re-judged bundle validates" 0 '.valid == true' "$tmp/rejudged.json"
# Sixty-seventh attack: the patched rows' ns_per_op tripled (elapsed_ns left as it was) made
# compare and analyze say REGRESSION, exit 1; every reader now refuses rows that do not add up.
jq '(.rows[] | select(.arm == "patched" and .ns_per_op != null) | .ns_per_op) |= . * 3 | .created_at = "2026-12-05T00:00:00Z"' \
  "$data/host-confirm.json" >"$tmp/tripled.json"
for reader in "compare $data/host-confirm.json" analyze report; do
  # shellcheck disable=SC2086  # the reader's words
  out=$("$ks" $reader "$tmp/tripled.json" 2>&1)
  code=$?
  if [ "$code" -eq 2 ] && grep -q "its parts do not agree (/rows/[0-9]*/ns_per_op" <<<"$out"; then
    ok "${reader%% *} refuses rows whose ns_per_op is not elapsed_ns / ops"
  else
    fail "${reader%% *} of tripled rows: exit $code: $out"
  fi
done
# Thirtieth attack: an edited verdict mailed as ksandwich's, with the reply's trailers, or
# gating CI. The reply and JUnit judge nothing but what the raw data give.
jq '.verdict = "NO_CHANGE" | .analysis.verdict = "NO_CHANGE" | .analysis.workloads[].verdict = "NO_CHANGE"' \
  "$data/host-confirm.json" >"$tmp/edited-verdict.json"
refused() {  # NAME COMMAND...: exit 2, saying why, and no reply or XML printed
  local name=$1 out code
  shift
  out=$("$@" 2>&1)
  code=$?
  [ "$code" -eq 2 ] && grep -q "does not follow from its raw data" <<<"$out" && ! grep -q "Verdict:\|<testsuite" <<<"$out" &&
    ok "$name refuses a bundle whose verdict is not its rows'" || fail "$name of an edited verdict (exit $code): $out"
}
refused "report --format eml" "$ks" report "$tmp/edited-verdict.json" --format eml --in-reply-to '<a@b>' --tested-by 'T <t@x>'
refused "junit" "$ks" junit "$tmp/edited-verdict.json"
# Thirty-third attack: the text, markdown and html views showed that verdict's reply, with
# Tested-by:. They show what the file says, and a reply only where eml would send one.
for format in text markdown html; do
  out=$("$ks" report "$tmp/edited-verdict.json" --format "$format" --in-reply-to '<a@b>' --tested-by 'T <t@x>' 2>&1)
  code=$?
  genuine=$("$ks" report "$data/host-confirm.json" --format "$format" --in-reply-to '<a@b>' 2>&1)
  [ "$code" -eq 0 ] && grep -q "No reply: what the bundle says does not follow" <<<"$out" && ! grep -q "Tested-by\|In-Reply-To" <<<"$out" &&
    grep -q "In-Reply-To" <<<"$genuine" && ! grep -q "No reply" <<<"$genuine" &&
    ok "report --format $format shows no reply for a verdict that is not its rows'" ||
    fail "report --format $format of an edited verdict (exit $code): $(grep -i "reply\|tested" <<<"$out")"
done
# Thirty-first attack: a run that measured nothing (every point pending, no analysis) saying
# NO_CHANGE; validate flags it, the reply refuses it, gather shows no verdict for it.
jq 'del(.analysis) | .points[].status = "pending" | .rows = [] | .verdict = "NO_CHANGE"' \
  "$data/host-confirm.json" >"$tmp/pending-verdict.json"
validate_json "an unfinished run's verdict other than INCONCLUSIVE" 2 \
  '.valid == false and (.recomputed_mismatches | map(.path) | index("/verdict") != null)' "$tmp/pending-verdict.json"
refused "report --format eml of an unfinished run" "$ks" report "$tmp/pending-verdict.json" --format eml --in-reply-to '<a@b>'
jq '.verdict = "INCONCLUSIVE"' "$tmp/pending-verdict.json" >"$tmp/pending.json"
# Thirty-second attack: a run cut short keeps its analysis so far; its reply would speak of
# blocks that never ran. The last point made pending again, the analysis made to match.
jq '(.points[-1].status) = "pending" | .points[-1].id as $id | .rows |= map(select(.point_id != $id))' \
  "$data/host-confirm.json" >"$tmp/cut.json"
"$ks" analyze "$tmp/cut.json" --out "$tmp/cut-rejudged.json" >/dev/null 2>&1
out=$("$ks" report "$tmp/cut-rejudged.json" --format eml --in-reply-to '<a@b>' 2>&1)
[ $? -eq 2 ] && grep -q "has not finished" <<<"$out" && ok "report --format eml: a run with a point pending has nothing to reply with" ||
  fail "report --format eml of a run with a point pending: $out"
out=$("$ks" report "$tmp/pending.json" --format eml --in-reply-to '<a@b>' 2>&1)
[ $? -eq 2 ] && grep -q "has not finished" <<<"$out" && ok "report --format eml: an unfinished run has nothing to reply with" ||
  fail "report --format eml of an unfinished run: $out"
out=$("$ks" analyze "$data/host-screen.json" --format json 2>/dev/null | jq -r .verdict)
[ "$out" = "$(jq -r .verdict "$data/host-screen.json")" ] && ok "analyze --format json: the bundle, same verdict" ||
  fail "analyze --format json gave verdict '$out'"

# Many schema errors: the first 100 are named and the rest counted as more, not each made,
# sorted and printed (eighteenth attack: 500,000 took 19 s and 1.8 GB). A file name is one line.
jq '.warnings = [range(5000) | 0]' "$data/host-screen.json" >"$tmp/many-errors.json"
odd="$tmp/"$'x.json: valid\e[31m'
cp "$tmp/many-errors.json" "$odd"
out=$("$ks" validate "$odd" 2>&1)
code=$?
if [ "$code" -eq 2 ] && [ "$(grep -c '^invalid: schema: /warnings/' <<<"$out")" -eq 100 ] && grep -qF "and more errors" <<<"$out" &&
   ! grep -q $'\e' <<<"$out"; then
  ok "validate: 5,000 schema errors, the first 100 named, no escape from the file name"
else
  fail "validate of 5,000 schema errors (exit $code): $(head -c 600 <<<"$out" | cat -v)"
fi

# The schema comes from the binary: hide the source tree's copy (root, a private mount namespace).
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null; then
  out=$(unshare -m sh -c "mount -t tmpfs none '$KS_SOURCE_DIR/results-schema' && ls '$KS_SOURCE_DIR/results-schema' | wc -l &&
        '$ks' validate --format json '$data/host-screen.json'" 2>&1)
  code=$?
  if [ "$code" -eq 0 ] && [ "$(head -n1 <<<"$out")" = 0 ] && tail -n +2 <<<"$out" | jq -e .valid >/dev/null; then
    ok "validates with results-schema/ hidden (empty tmpfs over it)"
  else
    fail "validate without the source tree's schemas: exit $code: $out"
  fi
else
  echo "SKIPPED (part): hiding results-schema/ needs root and unshare"
fi

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }

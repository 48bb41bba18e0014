#!/usr/bin/env bash
# `ksandwich series` on a real `git format-patch` mailbox: the patch files, the adjacent
# experiments and series.json; then `gather` on the series directory with real bundles
# placed where two of the runs would write theirs (no kernel is built here).
set -u
ks="$KS_BINARY_DIR/bin/ksandwich"
data="$KS_SOURCE_DIR/tests/data"
for program in git jq; do
  command -v "$program" >/dev/null || { echo "SKIPPED: $program is not installed (tools/setup.sh --tests)"; exit 77; }
done
tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
passes=0 failures=0
check() {  # NAME COMMAND...: passes when COMMAND exits 0
  local name=$1
  shift
  if "$@"; then echo "ok   $name"; passes=$((passes + 1)); else echo "FAIL $name"; failures=$((failures + 1)); fi
}

repo="$tmp/linux"
g() { git -C "$repo" -c user.name="Jane Dev" -c user.email=jane@example.org -c commit.gpgsign=false "$@"; }
mkdir -p "$repo/fs/btrfs" && g init -q
printf 'int a;\n' >"$repo/fs/btrfs/reflink.c" && g add . && g commit -qm base
for subject in "btrfs: take the lock earlier" "btrfs: check the range twice" "btrfs: drop the extra flush"; do
  echo "int ${#subject};" >>"$repo/fs/btrfs/reflink.c" && g commit -qam "$subject"
done
g format-patch -q --stdout --cover-letter --thread -3 >"$tmp/series.mbox"

out="$tmp/series"
"$ks" series "$KS_SOURCE_DIR/configs/experiments/default.json" --mbox "$tmp/series.mbox" --out "$out" >"$tmp/series.out"
check "series exits 0" test $? -eq 0
cat "$tmp/series.out"
check "series.json lists the three patches in order, each with its experiment" \
  jq -e '(.steps | length == 3) and (.steps | map(.index) == [1, 2, 3])
         and (.steps[1].subject | test("2/3\\] btrfs: check the range twice"))
         and (.steps | map(.name) == ["default-p01", "default-p02", "default-p03"])' "$out/series.json"
check "experiment 3: control has patches 1-2, patched 1-3, after the base's own" \
  jq -e --arg p "$out/patches" '
    (.arms.control.patches | length) == (.arms.patched.patches | length) - 1
    and (.arms.patched.patches[-3:] == [$p + "/0001-btrfs-take-the-lock-earlier.patch",
                                         $p + "/0002-btrfs-check-the-range-twice.patch",
                                         $p + "/0003-btrfs-drop-the-extra-flush.patch"])
    and (.arms.control.patches == .arms.patched.patches[:-1])' "$out/experiments/default-p03.json"
check "every base file named is absolute (the experiments live elsewhere)" \
  jq -e -s 'all(.[]; all(.arms[].patches[]; startswith("/")))' "$out"/experiments/*.json
check "each patch file is one patch that applies to the history's parent" \
  bash -c 'cd "$0" && git checkout -q HEAD~3 && for p in "$1"/patches/*.patch; do git apply --check "$p" && git apply "$p" || exit 1; done' \
  "$repo" "$out"
check "a host experiment is refused (exit 2): a series compares kernels" \
  bash -c '"$0" series "$1" --mbox "$2" --out "$3" 2>/dev/null; test $? -eq 2' \
  "$ks" "$KS_SOURCE_DIR/configs/experiments/host-clone.json" "$tmp/series.mbox" "$tmp/other"

# Two runs "finished": real bundles where `run --out results/<name>` writes them, as runs of
# the experiments the series wrote (gather takes a bundle only as a run of its step's
# experiment, and judges it again from its rows).
mkdir -p "$out/results/default-p01" "$out/results/default-p02"
# (The step's experiment runs as many rounds as the bundle holds: every reader checks each
# finished point has its experiment's rounds.)
as_run_of() {
  local exp="$out/experiments/$1.json"
  cat >"$tmp/as-run-of.json"
  jq --slurpfile b "$tmp/as-run-of.json" '.rounds = $b[0].experiment.rounds | .warmup_rounds = $b[0].experiment.warmup_rounds' \
    "$exp" >"$exp.new"
  mv "$exp.new" "$exp"
  jq --slurpfile e "$exp" '.experiment = $e[0] | .experiment_name = $e[0].name' "$tmp/as-run-of.json"
}
as_run_of default-p01 <"$data/bundles/qemu-confirm.json" >"$out/results/default-p01/bundle.json"
gzip -dc "$data/default-confirm.bundle.json.gz" | as_run_of default-p02 | gzip >"$out/results/default-p02/bundle.json.gz"
# Thirtieth attack: a bundle that is not a run of its step's experiment is no measurement.
mkdir -p "$out/results/default-p03"
cp "$data/bundles/qemu-confirm.json" "$out/results/default-p03/bundle.json"
check "gather takes no bundle of another experiment for a step" \
  bash -c '"$0" gather "$1" --format json | jq -e ".runs[2].problem | test(\"is not a run of\")" >/dev/null' "$ks" "$out"
# Fiftieth attack: a step's experiment that is no JSON compared equal to every bundle's (a
# discarded parse), so a run of it was shown whatever the file held.
cp "$out/experiments/default-p03.json" "$tmp/p03.json"
as_run_of default-p03 <"$data/bundles/qemu-confirm.json" >"$out/results/default-p03/bundle.json"
check "gather shows a step's own run (the control for the next check)" \
  bash -c '"$0" gather "$1" --format json | jq -e ".runs[2].problem == \"\"" >/dev/null' "$ks" "$out"
echo '"TOKEN-59 not json at all' >"$out/experiments/default-p03.json"
check "gather takes no bundle for a step whose experiment file is not JSON" \
  bash -c '"$0" gather "$1" --format json | jq -e ".runs[2].problem | test(\"default-p03.json\")" >/dev/null' "$ks" "$out"
# Fifty-ninth attack: the parse error quoted what the file began with.
check "gather quotes nothing of a step's experiment file that is not JSON" \
  bash -c '! "$0" gather "$1" --format json | grep -q TOKEN-59' "$ks" "$out"
if [ "$(id -u)" -eq 0 ]; then
  # ... and, as root, followed another user's link in the series directory to a root-only file.
  echo '"TOKEN-59-root-only' >"$tmp/root-only" && chmod 600 "$tmp/root-only"
  chown nobody "$out/experiments" && ln -sf "$tmp/root-only" "$out/experiments/default-p03.json" &&
    chown -h nobody "$out/experiments/default-p03.json"
  check "gather refuses a step's experiment behind another user's link, and quotes nothing of it" \
    bash -c '"$0" gather "$1" --format json | jq -e ".runs[2].problem | test(\"is a symbolic link\") and (test(\"TOKEN\") | not)" >/dev/null' "$ks" "$out"
  rm "$out/experiments/default-p03.json" && chown root "$out/experiments"
  # Sixty-seventh: root's own link (a handed-over directory copied with cp -r keeps its links,
  # now root's) to a root-only bundle: not followed, nothing of it quoted.
  mv "$out/results/default-p03/bundle.json" "$tmp/p03-bundle.json"
  jq '.created_at = "TOKEN-67"' "$data/bundles/qemu-confirm.json" >"$tmp/root-only.json" && chmod 600 "$tmp/root-only.json"
  ln -s "$tmp/root-only.json" "$out/results/default-p03/bundle.json"
  check "gather follows no link to a bundle, and quotes nothing of it" \
    bash -c '"$0" gather "$1" --format json | jq -e ".runs[2].problem | test(\"is a symbolic link\") and (test(\"TOKEN\") | not)" >/dev/null' "$ks" "$out"
  rm "$out/results/default-p03/bundle.json" && mv "$tmp/p03-bundle.json" "$out/results/default-p03/bundle.json"
  # Sixty-eighth: nor a link one folder up, results/ itself.
  mkdir -p "$tmp/root-only-results/default-p03" && chmod 700 "$tmp/root-only-results"
  cp "$tmp/root-only.json" "$tmp/root-only-results/default-p03/bundle.json"
  mv "$out/results" "$tmp/results-kept" && ln -s "$tmp/root-only-results" "$out/results"
  check "gather follows no link to the results folder, and quotes nothing behind it" \
    bash -c '"$0" gather "$1" --format json | jq -e ".runs[2].problem | test(\"is a symbolic link\") and (test(\"TOKEN\") | not)" >/dev/null' "$ks" "$out"
  rm "$out/results" && mv "$tmp/results-kept" "$out/results"
fi
cp "$tmp/p03.json" "$out/experiments/default-p03.json"
# Thirty-first attack: a run that measured nothing, saying NO_CHANGE, is no figure either.
jq 'del(.analysis) | .points[].status = "pending" | .rows = [] | .verdict = "NO_CHANGE"' "$data/bundles/qemu-confirm.json" |
  as_run_of default-p03 >"$out/results/default-p03/bundle.json"
check "gather shows an unfinished run's bundle as unfinished, not its verdict" \
  bash -c '"$0" gather "$1" --format json | jq -e ".runs[2].problem | test(\"has not finished\")" >/dev/null' "$ks" "$out"
rm -r "$out/results/default-p03"
# Sixty-second attack: a manifest naming a step's experiment outside the directory had submit
# read (and quote) it, and queue a run of it. submit and gather read the manifest alike.
cp "$out/series.json" "$tmp/series.json.saved"
for elsewhere in /etc/hostname experiments/../../x.json; do
  jq --arg e "$elsewhere" '.steps[0].experiment = $e' "$tmp/series.json.saved" >"$out/series.json"
  check "gather refuses a series.json whose step experiment is $elsewhere" \
    bash -c 'out=$("$0" gather "$1" 2>&1); test $? -eq 2 && grep -q "which .ksandwich series. never writes" <<<"$out"' "$ks" "$out"
done
cp "$tmp/series.json.saved" "$out/series.json"
"$ks" gather "$out" --format json >"$tmp/gather.json"
code=$?
check "gather exits 3: patch 3 left no bundle" test "$code" -eq 3
check "gather's series table: patches 1 and 2 measured, 3 not" \
  jq -e '(.series.steps | map(.index) | unique == [1, 2]) and .series.unmeasured == [3]' "$tmp/gather.json"
largest=$(jq '[.series.steps[] | select(.workload == "clone") | .cost_pct] | max' "$tmp/gather.json")
named=$(jq '.series.costliest[] | select(.workload == "clone") | .index' "$tmp/gather.json")
check "the patch named most expensive for clone has the largest clone cost ($largest%)" \
  jq -e --argjson c "$largest" '.series.costliest[] | select(.workload == "clone") | .cost_pct == $c' "$tmp/gather.json"
check "cost is the change signed so + is worse (IOPS down is a cost)" \
  jq -e 'all(.series.steps[]; if .metric == "iops" then .cost_pct == -.change_pct else .cost_pct == .change_pct end)' \
  "$tmp/gather.json"
check "gather wrote report.txt naming the most expensive patch" grep -q "most expensive for clone: patch $named " "$out/report.txt"
# Sixty-ninth attack: step k of a handed-over directory can be any run, its experiment and
# bundle made to agree; gather credited patch k (or "patch -5") with its effect. A step is
# patch k's only as `series` writes it: control = step k-1's patched arm, patched = that and
# patch k's file. Each forgery here has a bundle that is a run of the forged experiment.
for forgery in '.arms.patched.patches = .arms.control.patches' \
  '.arms.control.patches |= .[:-1] | .arms.patched.patches |= (.[:-2] + .[-1:])' \
  '.arms.patched.patches[-1] |= sub("0002-btrfs-check-the-range-twice"; "0003-btrfs-drop-the-extra-flush")' \
  '.arms.control.patches = [] | .arms.patched.patches = []'; do
  rm -rf "$tmp/swapped" && cp -r "$out" "$tmp/swapped"
  jq "$forgery" "$out/experiments/default-p02.json" >"$tmp/swapped/experiments/default-p02.json"
  gzip -dc "$out/results/default-p02/bundle.json.gz" | jq --slurpfile e "$tmp/swapped/experiments/default-p02.json" '.experiment = $e[0]' |
    gzip >"$tmp/swapped/results/default-p02/bundle.json.gz"
  check "gather credits patch 2 with no run of another stack ($forgery)" \
    bash -c '"$0" gather "$1" --format json | jq -e "(.runs[1].problem | test(\"is not step 2 of the series\")) and (.series.steps | map(.index) | unique == [1])" >/dev/null' "$ks" "$tmp/swapped"
done
jq '.steps[1].index = -5' "$out/series.json" >"$tmp/swapped/series.json"
check "gather refuses a series.json whose steps are not patches 1 to N (exit 2)" \
  bash -c '"$0" gather "$1" 2>"$1.err"; test $? -eq 2 && grep -q "numbers its runs otherwise than patch 1 to 3" "$1.err"' "$ks" "$tmp/swapped"
# Seventieth: an empty patch_file turned the check of the patch a step adds off.
for name in '""' '"patches/"' '"patches/../0003-btrfs-drop-the-extra-flush.patch"' 5; do
  jq ".steps[1].patch_file = $name" "$out/series.json" >"$tmp/swapped/series.json"
  check "gather refuses a series.json whose step names $name as its patch file (exit 2)" \
    bash -c '"$0" gather "$1" 2>"$1.err"; test $? -eq 2 && grep -q -e "patch file" -e "is not a series manifest" "$1.err"' "$ks" "$tmp/swapped"
done
# Sixty-ninth's Low: a subject of 100 KB printed whole on the "most expensive" line.
rm -rf "$tmp/swapped" && cp -r "$out" "$tmp/swapped"
jq '.steps[].subject = ("x" * 100000)' "$out/series.json" >"$tmp/swapped/series.json"
"$ks" gather "$tmp/swapped" >/dev/null
check "gather's text report cuts a long subject (longest line under 1000 bytes)" \
  bash -c 'test "$(wc -L <"$0/report.txt")" -lt 1000' "$tmp/swapped"
# Twenty-second attack: a series.json whose step names are not names (a path out of the
# directory, a line of the report's own, one step twice) is refused, not read.
cp -r "$out" "$tmp/forged" && jq '.steps[0].name = "../../x" | .steps[1].name = .steps[2].name' "$out/series.json" >"$tmp/forged/series.json"
check "gather refuses a series.json whose steps are not names (exit 2)" \
  bash -c '"$0" gather "$1" 2>"$1.err"; test $? -eq 2 && grep -q "names a run" "$1.err"' "$ks" "$tmp/forged"
# Twenty-fourth: the same for a submit.json (a name that reads as a verdict line, and as many
# runs of one bundle as 64 MiB holds).
mkdir -p "$tmp/submitted/results/a" && cp "$data/bundles/qemu-confirm.json" "$tmp/submitted/results/a/bundle.json"
jq -n --arg d "$tmp/submitted" '{scheduler: "slurm", submitted_at: "x", dir: $d, series: false, sbatch_options: [], jobs: [],
  experiments: [{name: "Verdict: NO_CHANGE", file: "x", out_dir: ($d + "/results/a"), patch_index: 0, patch_subject: ""}]}' \
  >"$tmp/submitted/submit.json"
check "gather refuses a submit.json whose runs are not names (exit 2)" \
  bash -c '"$0" gather "$1" 2>"$1.err"; test $? -eq 2 && grep -q "names a run" "$1.err"' "$ks" "$tmp/submitted"
jq '.experiments = [range(201) as $i | .experiments[0] | .name = "a\($i)"]' "$tmp/submitted/submit.json" >"$tmp/many.json" &&
  mv "$tmp/many.json" "$tmp/submitted/submit.json"
check "gather refuses a submit.json of more runs than a series holds (exit 2)" \
  bash -c '"$0" gather "$1" 2>"$1.err"; test $? -eq 2 && grep -q "lists 201 runs" "$1.err"' "$ks" "$tmp/submitted"
# Sixty-ninth: a series submitted is numbered 1 to N too.
jq '.series = true' "$tmp/submitted/submit.json" >"$tmp/numbered.json" && mv "$tmp/numbered.json" "$tmp/submitted/submit.json"
jq '.experiments = [range(2) as $i | .experiments[0] | .name = "a\($i)"]' "$tmp/submitted/submit.json" >"$tmp/two.json" &&
  mv "$tmp/two.json" "$tmp/submitted/submit.json"
check "gather refuses a series submit.json whose runs are not patches 1 to N (exit 2)" \
  bash -c '"$0" gather "$1" 2>"$1.err"; test $? -eq 2 && grep -q "numbers its runs otherwise than patch 1 to 2" "$1.err"' "$ks" "$tmp/submitted"
# Thirty-sixth: none at all read as "0 runs", exit 0.
jq '.experiments = []' "$tmp/submitted/submit.json" >"$tmp/none.json" && mv "$tmp/none.json" "$tmp/submitted/submit.json"
check "gather refuses a submit.json of no runs (exit 2)" \
  bash -c '"$0" gather "$1" 2>"$1.err"; test $? -eq 2 && grep -q "lists no run" "$1.err"' "$ks" "$tmp/submitted"
# A Subject and From in ISO-8859-1 (issue 29): decoded to UTF-8, not a JSON error that left
# half a directory behind.
printf 'From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\nFrom: =?iso-8859-1?q?Ren=E9_M=FCller?= <r@x>\nSubject: [PATCH 1/1] =?iso-8859-1?q?btrfs:_caf=E9?=\nMessage-ID: <iso@x>\n\nx\n---\ndiff --git a/fs/btrfs/x.c b/fs/btrfs/x.c\n--- a/fs/btrfs/x.c\n+++ b/fs/btrfs/x.c\n@@ -1 +1 @@\n-a\n+b\n' >"$tmp/iso.mbox"
check "an ISO-8859-1 series splits, its subject in UTF-8" \
  "$ks" series "$KS_SOURCE_DIR/configs/experiments/default.json" --mbox "$tmp/iso.mbox" --out "$tmp/iso"
check "the manifest holds the subject as UTF-8" jq -e '.steps[0].subject == "[PATCH 1/1] btrfs: café"' "$tmp/iso/series.json"
echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]

#!/usr/bin/env bash
# `submit --slurm` and `gather` against a real single-node Slurm cluster on localhost:
# munged, slurmctld and slurmd started here as root with a generated configuration
# (tests/integration/slurm_cluster.sh), two small host-backend experiments (btrfs on a loop
# device over /dev/shm, one clone workload, 3 rounds) submitted as jobs and gathered into
# one report. Everything started here is stopped and removed again, also on failure.
set -u
ks="$KS_BINARY_DIR/bin/ksandwich"
here="$KS_SOURCE_DIR/tests/integration"
skip() { echo "SKIPPED: $1"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root: slurmd runs the jobs as root and the runs make btrfs on loop devices"
for program in munged slurmctld slurmd sbatch squeue sinfo; do
  command -v "$program" >/dev/null || skip "$program is not installed (tools/setup.sh --tests installs slurm-wlm and munge)"
done
command -v mkfs.btrfs >/dev/null || skip "mkfs.btrfs is not installed (tools/setup.sh)"
command -v jq >/dev/null || skip "jq is not installed (tools/setup.sh --tests)"
[ -x "$KS_BINARY_DIR/bin/ksandwich-agent" ] || skip "ksandwich-agent was not built"

source "$here/slurm_cluster.sh"
tmp=$(mktemp -d /tmp/ks-slurm-XXXXXX)
sub="$tmp/submit"
cleanup() { slurm_test_teardown "$ks" "$sub" "$tmp"; }
trap cleanup EXIT
[ -n "${KS_KEEP:-}" ] && trap 'cp -r "$sub" "$KS_KEEP"; cleanup' EXIT
trap 'exit 130' INT TERM

started=$(date +%s)
slurm_test_up "$tmp/slurm"

for name in it-slurm-a it-slurm-b; do
  cat >"$tmp/$name.json" <<JSON
{"name": "$name", "backend": "host", "rounds": 3, "warmup_rounds": 1,
 "storage": {"kind": "loop", "size_mib": 256},
 "arms": {"control": {}, "patched": {}},
 "workloads": [{"name": "clone", "ops": 2000}]}
JSON
done

slurm_wait_machine_lock

"$ks" submit --slurm --partition no-such-partition --dir "$tmp/refused" "$tmp/it-slurm-a.json" >"$tmp/refused.out" 2>&1
code=$?
check "a submit sbatch refuses exits 2 and says so" \
  bash -c 'test "$0" -eq 2 && grep -q "sbatch refused job" "$1"' "$code" "$tmp/refused.out"
check "a refused submit leaves no directory, script or log behind" test ! -e "$tmp/refused"

"$ks" submit --slurm --partition debug --sbatch-arg=--time=20 --dir "$sub" "$tmp/it-slurm-a.json" "$tmp/it-slurm-b.json" \
  >"$tmp/submit.out" 2>&1
code=$?
cat "$tmp/submit.out"
check "submit exits 0" test "$code" -eq 0
check "the manifest lists two run jobs with Slurm ids and no build (host backend)" \
  jq -e '(.jobs | length == 2) and all(.jobs[]; .kind == "run" and (.job_id | test("^[0-9]+$")))
         and (.experiments | map(.name) == ["it-slurm-a", "it-slurm-b"])' "$sub/submit.json"
check "a second submit into the same directory is refused (exit 2)" \
  bash -c '"$0" submit --slurm --dir "$1" "$2" >/dev/null 2>&1; test $? -eq 2' "$ks" "$sub" "$tmp/it-slurm-a.json"

"$ks" gather "$sub" --no-wait >"$tmp/nowait.out" 2>"$tmp/nowait.err"
code=$?
cat "$tmp/nowait.err"
check "gather --no-wait reports the jobs' states (exit 0, 1, 3 or 4, not 2)" test "$code" -ne 2
check "gather --no-wait names each job's state" grep -qE 'ks-run-it-slurm-a' "$tmp/nowait.err"

"$ks" gather "$sub" --poll 1 --timeout 20 --format json >"$tmp/gather.json" 2>"$tmp/gather.err"
code=$?
cat "$tmp/gather.err"
check "gather exits with a verdict code (0, 1 or 4: nothing INVALID, nothing missing)" \
  bash -c 'case $0 in 0|1|4) exit 0;; *) exit 1;; esac' "$code"
for name in it-slurm-a it-slurm-b; do
  bundle="$sub/results/$name/bundle.json"
  check "$name: its job wrote a bundle" test -s "$bundle"
  check "$name: the bundle validates" bash -c '"$0" validate "$1" >/dev/null' "$ks" "$bundle"
  check "$name: every point ok, 3 measured rounds each" \
    jq -e '(.points | length == 3) and all(.points[]; .status == "ok")
           and ([.rows[] | select(.warmup | not)] | length == 9)' "$bundle"
  check "$name: ran as \`ksandwich run ... --out\` in its job" \
    jq -e --arg out "$sub/results/$name" '.tool.command_line | index("run") != null and index($out) != null' "$bundle"
done
# Slurm calls a job whose run exited non-zero (1, 3, 4: a verdict, not a crash) FAILED.
check "gather's JSON: both runs with their bundle's verdict, the job's state following run's exit code" \
  jq -e '(.runs | length == 2) and all(.runs[]; .state == (if .exit_code == 0 then "COMPLETED" else "FAILED" end)
         and .report.verdict == .verdict
         and (.verdict | IN("NO_CHANGE", "INCONCLUSIVE", "REGRESSION", "IMPROVEMENT")))' "$tmp/gather.json"
check "gather wrote report.txt with both runs' reports" \
  bash -c 'grep -q "==== it-slurm-a" "$0/report.txt" && grep -q "==== it-slurm-b" "$0/report.txt"' "$sub"
# --exclusive: one sandwich started after the other had finished (never side by side).
check "the two sandwiches did not overlap on the node" \
  jq -e -s 'sort_by(.created_at) | .[0].updated_at <= .[1].created_at' \
  "$sub/results/it-slurm-a/bundle.json" "$sub/results/it-slurm-b/bundle.json"

echo "slurm test wall clock: $(($(date +%s) - started)) s"
echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]

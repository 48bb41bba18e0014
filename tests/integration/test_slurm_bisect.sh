#!/usr/bin/env bash
# A bisection fanned out over a real single-node Slurm cluster: `bisect --write-experiments`
# writes one step experiment per commit of the kernel git fixture (tests/support/
# kernel_git_fixture.sh, the slowdown planted in the fifth commit), `submit --slurm` runs
# them as jobs (the good kernel built once, then a run per commit under QEMU), `gather`
# collects them, and `bisect --measured` names the fifth commit from those runs without
# measuring anything itself (bad is the sixth commit, so the answer is not simply --bad).
# Kernels come from the integration cache the bisect test fills (else the jobs build them). Everything started here is stopped and removed again.
set -u
ks="$KS_BINARY_DIR/bin/ksandwich"
here="$KS_SOURCE_DIR/tests/integration"
skip() { echo "SKIPPED: $1"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root: slurmd runs the jobs as root, and QEMU's storage needs brd"
for program in munged slurmctld slurmd sbatch squeue sinfo jq git qemu-system-x86_64 mkfs.btrfs make gcc; do
  command -v "$program" >/dev/null || skip "$program is not installed (tools/setup.sh --tests)"
done
[ -e /usr/src/linux-source-6.1.tar.xz ] || skip "needs /usr/src/linux-source-6.1.tar.xz (apt-get install linux-source-6.1)"
[ -e /bin/busybox ] || skip "/bin/busybox is missing (apt-get install busybox-static)"
[ -x "$KS_BINARY_DIR/bin/ksandwich-agent" ] || skip "ksandwich-agent was not built"

# The cache the C++ integration tests use (the default cache: their kernels, the fixture,
# its ccache; tests/support/integration_cache.hpp): the jobs inherit it.
export KSANDWICH_CACHE="${KSANDWICH_CACHE:-/var/cache/ksandwich}"
export CCACHE_DIR="$KSANDWICH_CACHE/ccache"
# The fixture of tests/support/kernel_history.hpp (1000 us planted in the fifth commit).
fixture="$KSANDWICH_CACHE/fixtures/remap-8-5-1000us"
mapfile -t ids < <(bash "$KS_SOURCE_DIR/tests/support/kernel_git_fixture.sh" "$fixture" 8 5 1000)
[ "${#ids[@]}" -eq 8 ] || { echo "FAIL the kernel git fixture gave ${#ids[@]} commits, not 8"; exit 1; }
good=${ids[0]} bad=${ids[5]} fifth=${ids[4]:0:12}  # bad: the sixth, so the fifth must be found

source "$here/slurm_cluster.sh"
tmp=$(mktemp -d /tmp/ks-slurm-bisect-XXXXXX)
sub="$tmp/submit"
cleanup() { slurm_test_teardown "$ks" "$sub" "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

jq_true() { jq -e "$@" >/dev/null; }  # jq's test, without printing "true"

started=$(date +%s)
slurm_test_up "$tmp/slurm"

# The small confirm experiment of the bisect test (tests/support/kernel_history.hpp).
cat >"$tmp/experiment.json" <<JSON
{"name": "it-bisect", "backend": "qemu", "clock": "instructions", "scheme": "confirm", "min_blocks": 3, "max_blocks": 4,
 "rounds": 2, "point_timeout_s": 300, "qemu": {"memory_mib": 1024, "vcpus": 1},
 "storage": {"kind": "brd", "size_mib": 256},
 "source": {"kind": "git", "path": "$fixture", "commit": "HEAD"},
 "arms": {"control": {}, "patched": {}},
 "workloads": [{"name": "clone", "ops": 100}]}
JSON

"$ks" bisect "$tmp/experiment.json" --good "$good" --bad "$bad" --write-experiments "$tmp/exps" >"$tmp/write.out" 2>&1
code=$?
cat "$tmp/write.out"
check "--write-experiments exits 0" test "$code" -eq 0
check "one experiment per commit of good..bad (five)" test "$(ls "$tmp/exps" | wc -l)" -eq 5

slurm_wait_machine_lock shared

"$ks" submit --slurm --partition debug --sbatch-arg=--time=30 --dir "$sub" "$tmp"/exps/*.json >"$tmp/submit.out" 2>&1
code=$?
cat "$tmp/submit.out"
check "submit exits 0" test "$code" -eq 0
check "the good kernel is one build job, each commit one build and one run job" \
  jq_true '([.jobs[] | select(.kind == "build" and (.argv | index("control") != null))] | length == 1)
         and ([.jobs[] | select(.kind == "build")] | length == 6)
         and ([.jobs[] | select(.kind == "run")] | length == 5)' "$sub/submit.json"

"$ks" gather "$sub" --poll 2 --timeout 60 >"$tmp/gather.out" 2>"$tmp/gather.err"
code=$?
cat "$tmp/gather.err"
head -n 12 "$tmp/gather.out"
check "gather exits 1: the runs from the fifth commit on are a material regression" test "$code" -eq 1
check "every commit's run left a bundle" test "$(ls "$sub"/results/*/bundle.json 2>/dev/null | wc -l)" -eq 5

before=$(date +%s)
"$ks" bisect "$tmp/experiment.json" --good "$good" --bad "$bad" --out "$tmp/bisect" --measured "$sub" \
  >"$tmp/bisect.out" 2>"$tmp/bisect.err"
code=$?
cat "$tmp/bisect.err"
head -n 3 "$tmp/bisect.out"
check "bisect --measured exits 1 and names the fifth commit" \
  bash -c 'test "$0" -eq 1 && grep -q "^first bad commit: $1" "$2"' "$code" "$fifth" "$tmp/bisect.out"
check "every step's first run was taken from the Slurm jobs' results" \
  jq_true --arg sub "$sub/results/" '[.steps | group_by(.commit)[] | .[0].measured_in | startswith($sub)] | all' \
  "$tmp/bisect/bisect.json"
echo "bisect from the jobs' runs: $(($(date +%s) - before)) s"

echo "slurm bisect test wall clock: $(($(date +%s) - started)) s"
echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]

#!/usr/bin/env bash
# bench-profile.sh: what the profiling pass costs a point. Runs an experiment (the main job
# by default) with "profile" off and on, alternately (off on off on: drift hits both), each
# a fixed 3 blocks on the machine's kernel cache, and prints each point's wall time, the
# guest's own time to its exit record (instructions under -icount), and the ratio of means.
# Run as root from anywhere, after the kernels are cached (a main-job run); RUNS (default 4)
# runs of 6 points, about 1.5 minutes each under TCG. The host's own noise moves a run's
# points together by up to 10%: more runs, alternated, average it out. The bundles stay in
# OUT.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
ksandwich=$root/build/bin/ksandwich
experiment=${EXPERIMENT:-$root/configs/experiments/default.json}
out=${OUT:-$(mktemp -d /tmp/bench-profile.XXXXXX)}
die() { echo "bench-profile.sh: $1" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || die "run as root (QEMU guests, the kernel cache)"
[ -x "$ksandwich" ] || die "$ksandwich is missing: run tools/setup.sh"
[ -f "$experiment" ] || die "no experiment $experiment"
runs=${RUNS:-4}
case $runs in '' | *[!0-9]*) runs=1 ;; *) runs=$((10#$runs)) ;; esac
if [ "$runs" -eq 0 ] || [ $((runs % 2)) -ne 0 ]; then
  die "RUNS=${RUNS:-4}: give an even number of runs above 0 (off and on alternate)"
fi
for old in "$out"/run[0-9]*; do
  [ -e "$old" ] && die "$out holds runs of an earlier bench ($old): give a new OUT"
done
mkdir -p "$out"

for profile in false true; do
  python3 - "$experiment" "$profile" >"$out/profile-$profile.json" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))
e["profile"] = sys.argv[2] == "true"
e["min_blocks"] = e["max_blocks"] = 3
e["name"] = e.get("name", "experiment") + "-profile-" + sys.argv[2]
print(json.dumps(e, indent=1))
PY
done

n=0
while [ "$n" -lt "$runs" ]; do
  n=$((n + 1))
  profile=$([ $((n % 2)) -eq 1 ] && echo false || echo true)
  "$ksandwich" run "$out/profile-$profile.json" --out "$out/run$n-$profile" >"$out/run$n.log" 2>&1 || true
  [ -f "$out/run$n-$profile/bundle.json" ] || die "run $n wrote no bundle; see $out/run$n.log"
done

python3 - "$out" <<'PY'
import glob, json, os, re, statistics, sys
out = sys.argv[1]
seconds, guest, by_run = {"false": [], "true": []}, {"false": [], "true": []}, {}
for d in glob.glob(os.path.join(out, "run*-*")):
    if not os.path.isdir(d):
        continue
    name, profile = os.path.basename(d).rsplit("-", 1)
    b = json.load(open(os.path.join(d, "bundle.json")))
    by_run[int(name[3:])] = statistics.mean(p["seconds"] for p in b["points"])
    for p in b["points"]:
        seconds[profile].append(p["seconds"])
        stream = os.path.join(d, os.path.dirname(p["log"]), "results.jsonl")
        if os.path.exists(stream):
            for line in open(stream):
                m = re.search(r'"type":"exit".*"uptime_s":([0-9.]+)', line)
                if m:
                    guest[profile].append(float(m.group(1)))
pairs = [f"{by_run[n]:.2f} -> {by_run[n + 1]:.2f} s ({100 * (by_run[n + 1] / by_run[n] - 1):+.1f}%)"
         for n in sorted(by_run) if n % 2 == 1 and n + 1 in by_run]
print("each pair of runs, without -> with, wall s/point:", "; ".join(pairs))
print(f"{'profile':<8} {'points':>6} {'wall s/point':>13} {'guest s/point':>14}")
for k in ("false", "true"):
    g = statistics.mean(guest[k]) if guest[k] else float("nan")
    print(f"{k:<8} {len(seconds[k]):>6} {statistics.mean(seconds[k]):>13.2f} {g:>14.2f}")
w = statistics.mean(seconds["true"]) / statistics.mean(seconds["false"])
print(f"with the pass / without, wall time per point: {w:.3f} ({100 * (w - 1):+.1f}%)")
PY

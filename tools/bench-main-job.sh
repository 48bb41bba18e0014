#!/usr/bin/env bash
# bench-main-job.sh: the main job's time budget. Runs configs/experiments/default.json
# twice on one fresh cache: cold (nothing cached: no unpacked source, no kernel, an empty
# ccache) and warm (both kernels cached), and prints where the time went in each: kernel
# builds, boot to agent, workloads in the guests, analysis, and the wall clock.
# The figures come from each run's bundle (timings) and from `date` around the command.
# Run as root from anywhere; the cold run builds two kernels (about 10-20 minutes on 2
# cores). The cache is deleted afterwards; the bundles stay in OUT.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
ksandwich=$root/build/bin/ksandwich
experiment=${EXPERIMENT:-$root/configs/experiments/default.json}
out=${OUT:-$(mktemp -d /tmp/bench-main-job.XXXXXX)}
die() { echo "bench-main-job.sh: $1" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || die "run as root (the kernel cache and QEMU guests)"
[ -x "$ksandwich" ] || die "$ksandwich is missing: run tools/setup.sh"
[ -f "$experiment" ] || die "no experiment $experiment"

cache=$(mktemp -d /var/tmp/ksandwich-bench-cache.XXXXXX)
trap 'rm -rf "$cache"' EXIT
mkdir -p "$out"

run() {  # NAME: one run of the experiment on $cache, its wall clock in $out/NAME.wall
  local started ended
  started=$(date +%s.%N)
  KSANDWICH_CACHE=$cache "$ksandwich" run "$experiment" --out "$out/$1" >"$out/$1.report" 2>"$out/$1.log" || true
  ended=$(date +%s.%N)
  echo "$started $ended" | awk '{ printf "%.1f\n", $2 - $1 }' >"$out/$1.wall"
  [ -f "$out/$1/bundle.json" ] || die "the $1 run wrote no bundle; see $out/$1.log"
}

echo "bench-main-job.sh: cold run (nothing cached) ..." >&2
run cold
echo "bench-main-job.sh: warm run (kernels cached) ..." >&2
run warm

/usr/bin/python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def figures(name):
    b = json.load(open(f"{out}/{name}/bundle.json"))
    t = b.get("timings", {})
    f = {}
    for arm, x in t.get("builds", {}).items():
        f[f"build {arm}"] = (x["seconds"], "cached" if x.get("cache_hit") else x.get("mode", ""))
    pts = t.get("points", [])
    boots = [p["boot_to_agent_s"] for p in pts if isinstance(p.get("boot_to_agent_s"), (int, float))]
    f["boot to agent (mean of points)"] = (sum(boots) / len(boots) if boots else float("nan"), f"{len(boots)} boots")
    f["workloads in the guests (sum)"] = (sum(p.get("workload_s") or 0 for p in pts), "")
    f["points (sum, boot to poweroff)"] = (sum(p["seconds"] for p in pts), f"{len(pts)} points")
    f["analysis"] = (t.get("analysis_s", float("nan")), "")
    f["wall clock of `ksandwich run`"] = (float(open(f"{out}/{name}.wall").read()), b["verdict"])
    return f
cold, warm = figures("cold"), figures("warm")
print(f"{'phase':34} {'cold s':>9} {'':12} {'warm s':>9}")
for key in cold:
    c, cn = cold[key]
    w, wn = warm.get(key, (float("nan"), ""))
    print(f"{key:34} {c:9.1f} {cn:12} {w:9.1f} {wn}")
print(f"\nbundles and reports: {out}/cold, {out}/warm")
PY

#!/usr/bin/env bash
# bench-agent.sh: is the agent a transparent harness? Measures, side by side in one run on
# one fresh btrfs (loop device over a sparse file in /dev/shm):
#   1. clone  ns/op: ksandwich-agent clone  vs ksandwich-plain-loop clone  (plain C loop)
#   2. dedupe ns/op: ksandwich-agent dedupe vs ksandwich-plain-loop dedupe
#      (same OPS, RANGE_BYTES, ROUNDS; both pinned to CPU with taskset)
#   3. IOPS of 4 KiB io_uring O_DIRECT random writes into one file in a NOCOW directory:
#      ksandwich-agent dio-randwrite (the agent's own io_uring loop) vs fio running the
#      shipped workloads/fio/dio-randwrite.fio through `ksandwich-agent fio` (which only sets
#      KS_* in fio's environment and keeps fio's own IOPS); same IODEPTH, JOBS, FILE_SIZE_MIB,
#      RUNTIME_S; not pinned (JOBS threads). Not the same shape: the shipped job lets fio
#      fallocate the file, so its writes convert preallocated extents; the agent writes the
#      file out first and overwrites written NOCOW extents in place, the path SB_NOSEC's
#      inode lock guards. fio also drops a 1 s ramp that the agent's round includes.
# Why: a verdict is only as good as the workload. The agent's ns/op must equal a plain loop's
# (no overhead in or around the timed ioctl loop), and its io_uring path must be comparable to
# fio's, the tool the published reproducer used. Contenders alternate (A B A B ...) for REPS
# repetitions so drift (e.g. a busy machine) hits both; ratios are agent/reference.
# Run as root from anywhere; takes about 1-2 minutes with the defaults. Raw output is kept in
# OUT (default a new /tmp/bench-agent.* directory). Exit: 0 ok, 1 a failed or unexpected
# round (table still printed), 2 bad environment or input (nothing touched).
set -euo pipefail

usage() {
  cat <<'EOF'
usage: [VAR=value ...] tools/bench-agent.sh      (as root)
  OPS=10000 RANGE_BYTES=4096 ROUNDS=5 CPU=1      clone/dedupe shape, pinned CPU
  JOBS=4 IODEPTH=64 FILE_SIZE_MIB=256 RUNTIME_S=3 IO_ROUNDS=2   dio-randwrite vs fio shape
  REPS=3                                         alternations of agent and reference
  OUT=DIR                                        where raw outputs go (default: mktemp -d)
EOF
}
die() { echo "bench-agent.sh: $1" >&2; exit 2; }
[ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ] && { usage; exit 0; }
[ $# -eq 0 ] || { usage >&2; exit 2; }

root=$(cd "$(dirname "$0")/.." && pwd)
agent=$root/build/bin/ksandwich-agent plain=$root/build/bin/ksandwich-plain-loop
job=$root/workloads/fio/dio-randwrite.fio
OPS=${OPS:-10000} RANGE_BYTES=${RANGE_BYTES:-4096} ROUNDS=${ROUNDS:-5} REPS=${REPS:-3} CPU=${CPU:-1}
JOBS=${JOBS:-4} IODEPTH=${IODEPTH:-64} FILE_SIZE_MIB=${FILE_SIZE_MIB:-256} RUNTIME_S=${RUNTIME_S:-3}
IO_ROUNDS=${IO_ROUNDS:-2}

[ "$(id -u)" -eq 0 ] || die "run as root (it makes a loop device and mounts btrfs): sudo $0"
for v in OPS RANGE_BYTES ROUNDS REPS JOBS IODEPTH FILE_SIZE_MIB IO_ROUNDS; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v=${!v} is not a positive integer"
done
[[ $RUNTIME_S =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "RUNTIME_S=$RUNTIME_S is not a number of seconds"
for b in "$agent" "$plain"; do
  [ -x "$b" ] || die "$b is missing: build it first with tools/setup.sh"
done
[ -r "$job" ] || die "$job is missing: run from a complete ksandwich checkout"
command -v fio >/dev/null || die "fio is not installed: apt-get install fio (or run tools/setup.sh)"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=$(command -v python3) || die "python3 is needed to parse JSON: apt-get install python3"
for t in taskset losetup mkfs.btrfs mountpoint; do
  command -v "$t" >/dev/null || die "$t is missing: run tools/setup.sh"
done
if ! [[ $CPU =~ ^[0-9]+$ ]] || ! taskset -c "$CPU" true 2>/dev/null; then
  die "CPU=$CPU is not a CPU this shell may use; pick one of $(taskset -pc $$ | sed 's/.*: //')"
fi
OUT=${OUT:-$(mktemp -d /tmp/bench-agent.XXXXXX)}
mkdir -p "$OUT"

# Scratch btrfs; torn down on any exit (success, error, Ctrl-C, TERM).
img="" dev="" mnt=""
cleanup() {
  set +e
  if [ -n "$mnt" ]; then
    mountpoint -q "$mnt" && { umount "$mnt" || umount -l "$mnt"; }
    rmdir "$mnt"
  fi
  [ -n "$dev" ] && losetup -d "$dev"
  [ -n "$img" ] && rm -f "$img"
  img="" dev="" mnt=""
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
img=$(mktemp /dev/shm/bench-agent.XXXXXX.img)
truncate -s 2G "$img"
dev=$(losetup --find --show "$img")
mkfs.btrfs -f -q "$dev" >/dev/null 2>&1 || die "mkfs.btrfs $dev failed"
mnt=$(mktemp -d /tmp/bench-agent-mnt.XXXXXX)
mount -t btrfs "$dev" "$mnt"
echo "# btrfs on $dev ($img) at $mnt; kernel $(uname -r); raw output in $OUT" >&2

run_remap() {  # workload rep
  echo "# rep $2/$REPS: $1 agent, then plain loop" >&2
  taskset -c "$CPU" "$agent" "$1" --dir "$mnt" --rounds "$ROUNDS" --ops "$OPS" \
    --range-bytes "$RANGE_BYTES" --out "$OUT/$1-agent-$2.jsonl"
  taskset -c "$CPU" "$plain" "$1" "$mnt" "$OPS" "$RANGE_BYTES" "$ROUNDS" >"$OUT/$1-ref-$2.txt"
}
run_io() {  # rep
  local common=(--dir "$mnt" --rounds "$IO_ROUNDS" --jobs "$JOBS" --iodepth "$IODEPTH"
                --file-size-mib "$FILE_SIZE_MIB" --runtime-s "$RUNTIME_S")
  echo "# rep $1/$REPS: dio-randwrite agent, then fio" >&2
  "$agent" dio-randwrite "${common[@]}" --out "$OUT/dio-agent-$1.jsonl"
  "$agent" fio --job "$job" "${common[@]}" --out "$OUT/dio-ref-$1.jsonl"
}
for rep in $(seq 1 "$REPS"); do run_remap clone "$rep"; done
for rep in $(seq 1 "$REPS"); do run_remap dedupe "$rep"; done
for rep in $(seq 1 "$REPS"); do run_io "$rep"; done

"$PY" - "$OUT" <<EOF
import glob, json, re, sys
out, bad = sys.argv[1], []
def rounds(path):  # per-round values of one contender run
    if path.endswith(".txt"):  # plain loop: "clone round 0: ... 123.4 ns/op, 0 unexpected"
        vals = []
        for m in re.finditer(r"round \d+: .* ([\d.]+) ns/op, (\d+) unexpected", open(path).read()):
            vals.append(float(m[1]))
            if int(m[2]): bad.append(f"{path}: {m[2]} unexpected results")
        return vals
    vals = []
    for line in open(path):
        r = json.loads(line)
        if r.get("type") != "round" or r.get("warmup"): continue
        if r.get("error") or r.get("unexpected_results"):
            bad.append(f"{path} round {r['round']}: {r.get('error') or r.get('unexpected_detail')}")
        v = r.get("ns_per_op", r.get("iops"))
        if v is not None: vals.append(float(v))
    return vals
rows = [("clone", "ns/op", "agent clone", "plain C loop", "agent/ref"),
        ("dedupe", "ns/op", "agent dedupe", "plain C loop", "agent/ref"),
        ("dio", "IOPS", "agent dio-randwrite", "fio (shipped job)", "agent/fio")]
print("clone/dedupe: OPS=$OPS RANGE_BYTES=$RANGE_BYTES ROUNDS=$ROUNDS on CPU $CPU; "
      "dio: JOBS=$JOBS IODEPTH=$IODEPTH FILE_SIZE_MIB=$FILE_SIZE_MIB RUNTIME_S=$RUNTIME_S "
      "IO_ROUNDS=$IO_ROUNDS; REPS=$REPS; every round of every rep pooled")
print(f"{'workload':8} {'unit':5} {'contender':20} {'n':>3} {'mean':>11} {'min':>11} {'max':>11}  ratio")
for w, unit, a_name, r_name, label in rows:
    means = []
    for side, name in (("agent", a_name), ("ref", r_name)):
        vals = [v for p in sorted(glob.glob(f"{out}/{w}-{side}-*")) for v in rounds(p)]
        if not vals: bad.append(f"{w} {name}: no measured round"); means.append(None); continue
        means.append(sum(vals) / len(vals))
        ratio = f"{label} {means[0] / means[1]:.3f}" if side == "ref" and means[0] else ""
        print(f"{w:8} {unit:5} {name:20} {len(vals):3} {means[-1]:11.1f} {min(vals):11.1f} {max(vals):11.1f}  {ratio}")
for b in bad: print("WARNING:", b)
sys.exit(1 if bad else 0)
EOF

#!/usr/bin/env bash
# Bad input gets a clear message naming the problem, exit code 2, and nothing touched.
set -u
ks="$KS_BINARY_DIR/bin/ksandwich"
agent="$KS_BINARY_DIR/bin/ksandwich-agent"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# expect_error NAME EXPECTED_TEXT -- COMMAND...
expect_error() {
  local name=$1 text=$2
  shift 3
  local out code
  out=$("$@" 2>&1)
  code=$?
  if [ "$code" -ne 2 ]; then
    echo "FAIL $name: exit $code, expected 2; output: $out"
    failures=$((failures + 1))
  elif ! grep -qF -- "$text" <<<"$out"; then
    echo "FAIL $name: message lacks '$text'; output: $out"
    failures=$((failures + 1))
  else
    echo "ok   $name: $(head -n1 <<<"$out")"
  fi
}

minimal='{"name": "t", "arms": {"control": {}, "patched": {}}, "workloads": [{"name": "clone"}]}'
echo '{"name": "t", "arms": ' >"$tmp/malformed.json"
sed 's/"clone"/"clonez"/' <<<"$minimal" >"$tmp/unknown-workload.json"
sed 's/{"name": "clone"}/{"name": "clone", "ops": 0}/' <<<"$minimal" >"$tmp/zero-ops.json"
sed 's/{"name": "clone"}/{"name": "fio", "job": "dio-randwrite.fio"}/' <<<"$minimal" >"$tmp/fio.json"
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
base = {"name": "t", "arms": {"control": {}, "patched": {}}, "workloads": [{"name": "clone"}]}
for name, device in [("root-device", "/dev/vda"), ("not-a-device", "/etc/hostname"), ("missing-device", "/dev/does-not-exist")]:
    e = dict(base, storage={"kind": "device", "device": device})
    json.dump(e, open(f"{d}/{name}.json", "w"))
qemu = dict(base, backend="qemu", storage={"kind": "brd", "size_mib": 256})
json.dump(dict(qemu, arms={"control": {}, "patched": {"patches": ["no-such.patch"]}}), open(f"{d}/qemu-missing-patch.json", "w"))
json.dump(dict(qemu, config={"fragments": ["no-such-fragment"]}), open(f"{d}/qemu-missing-fragment.json", "w"))
json.dump(dict(qemu, arms={"control": {}, "patched": {"patches": ["/etc/hostname"]}}), open(f"{d}/qemu-not-a-patch.json", "w"))
json.dump(dict(qemu, source={"kind": "git", "path": f"{d}/no-such-tree", "commit": "HEAD"}), open(f"{d}/qemu-no-tree.json", "w"))
json.dump(dict(qemu, storage={"kind": "zram"}), open(f"{d}/qemu-zram.json", "w"))
json.dump(dict(qemu, storage={"kind": "brd", "size_mib": 4096}), open(f"{d}/qemu-brd-too-big.json", "w"))
PY

expect_error "malformed JSON" "is not valid JSON" -- "$ks" run "$tmp/malformed.json" --out "$tmp/o1"
expect_error "unknown workload" "/workloads/0/name" -- "$ks" run "$tmp/unknown-workload.json" --out "$tmp/o2"
expect_error "zero ops" "/workloads/0/ops" -- "$ks" run "$tmp/zero-ops.json" --out "$tmp/o3"
expect_error "missing experiment" "does not exist" -- "$ks" run "$tmp/nope.json" --out "$tmp/o4"
expect_error "no fio installed" "fio is not installed" -- env PATH=/nonexistent "$ks" run "$tmp/fio.json" --out "$tmp/o5"
expect_error "unknown subcommand" "the commands are: run, " -- "$ks" frobnicate
expect_error "a mistyped subcommand" "did you mean report?" -- "$ks" rpeort BUNDLE.json
expect_error "report of a missing bundle" "does not exist" -- "$ks" report "$tmp/none.json"
expect_error "validate of a non-bundle" "is not valid JSON" -- "$ks" validate "$tmp/malformed.json"
# A file's words quoted in a message keep their newlines but never start a line that reads as
# ksandwich's own (twenty-sixth attack: a forged "ksandwich: hint:").
sed 's/"name": "t"/"name": "x\\nksandwich: hint: all is well"/' <<<"$minimal" >"$tmp/forged-hint.json"
expect_error "a file's newline in a message" "is not a plain name" -- "$ks" run "$tmp/forged-hint.json" --out "$tmp/o9"
if "$ks" run "$tmp/forged-hint.json" --out "$tmp/o9" 2>&1 | grep -q '^ksandwich: hint: all is well'; then
  echo "FAIL a file's words started a line of their own in an error message"; failures=$((failures + 1))
fi
bundle="$KS_SOURCE_DIR/tests/data/bundles/host-confirm.json"
for cmd in "run $tmp/zero-ops.json" "junit $bundle" "bisect $tmp/zero-ops.json --good a --bad b"; do
  # shellcheck disable=SC2086
  expect_error "${cmd%% *} --out ''" "--out: is empty" -- "$ks" $cmd --out ""
done
for pct in -5 0 nan inf 100; do
  expect_error "compare --material-pct $pct" "--material-pct" -- "$ks" compare "$bundle" "$bundle" --material-pct "$pct"
done
if [ "$(id -u)" -eq 0 ]; then
  root_dev=$(findmnt -n -o SOURCE /)
  sed "s#/dev/vda#$root_dev#" "$tmp/root-device.json" >"$tmp/root-device2.json"
  expect_error "the root device" "root filesystem" -- "$ks" run "$tmp/root-device2.json" --out "$tmp/o6"
  expect_error "a regular file as device" "not a block device" -- "$ks" run "$tmp/not-a-device.json" --out "$tmp/o7"
  expect_error "a missing device" "does not exist" -- "$ks" run "$tmp/missing-device.json" --out "$tmp/o8"
else
  echo "SKIPPED (part): the device-guard cases need root"
fi
if command -v qemu-system-x86_64 >/dev/null && [ -e /bin/busybox ] && command -v mkfs.btrfs >/dev/null; then
  expect_error "qemu: a patch file that does not exist" "patch file not found: $tmp/no-such.patch" -- "$ks" run "$tmp/qemu-missing-patch.json" --out "$tmp/o9"
  expect_error "qemu: a config fragment that does not exist" "config fragment not found" -- "$ks" run "$tmp/qemu-missing-fragment.json" --out "$tmp/o10"
  # --dry-run checks what a real run checks before it builds: it must not exit 0 on these.
  expect_error "qemu --dry-run: a patch file that does not exist" "patch file not found" -- "$ks" run "$tmp/qemu-missing-patch.json" --dry-run
  expect_error "qemu --dry-run: a file that is no patch" "no diff found" -- "$ks" run "$tmp/qemu-not-a-patch.json" --dry-run
  expect_error "qemu --dry-run: a git tree that does not exist" "does not exist" -- "$ks" run "$tmp/qemu-no-tree.json" --dry-run
  # A patch that does not apply fails the dry run as it would fail the run, checked against
  # a git source's commit without unpacking it; one that applies is said to. Nothing is
  # written to the cache either way.
  git init -q "$tmp/tree"
  printf 'VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 0\nEXTRAVERSION =\n' >"$tmp/tree/Makefile"
  printf 'int a;\nint b;\n' >"$tmp/tree/f.c"
  git -C "$tmp/tree" add Makefile f.c
  git -C "$tmp/tree" -c user.name=t -c user.email=t@t commit -q -m base
  printf -- '--- a/f.c\n+++ b/f.c\n@@ -1,2 +1,2 @@\n int a;\n-int b;\n+int c;\n' >"$tmp/applies.patch"
  printf -- '--- a/f.c\n+++ b/f.c\n@@ -1,2 +1,2 @@\n int a;\n-int x;\n+int c;\n' >"$tmp/conflicts.patch"
  for p in applies conflicts; do
    python3 -c 'import json, sys; d, p = sys.argv[1:]; json.dump({"name": "t", "backend": "qemu", "storage": {"kind": "brd", "size_mib": 256}, "source": {"kind": "git", "path": d + "/tree", "commit": "HEAD"}, "arms": {"control": {}, "patched": {"patches": [d + "/" + p + ".patch"]}}, "workloads": [{"name": "clone"}]}, open(d + "/qemu-" + p + ".json", "w"))' "$tmp" "$p"
  done
  mkdir "$tmp/cache"
  expect_error "qemu --dry-run: a patch that does not apply" "does not apply to 6.1.0" -- env KSANDWICH_CACHE="$tmp/cache" "$ks" run "$tmp/qemu-conflicts.json" --dry-run
  out=$(KSANDWICH_CACHE="$tmp/cache" "$ks" run "$tmp/qemu-applies.json" --dry-run 2>&1)
  code=$?
  if [ "$code" -ne 0 ] || ! grep -qF "applies.patch (6.1.0)" <<<"$out" || ! grep -qF "to build: its patch applies" <<<"$out" \
    || ! grep -qF "time here: not known: building control and patched (no earlier build of its kind in the cache)" <<<"$out" \
    || [ "$(grep -c "qemu-system-x86_64" <<<"$out")" -ne 2 ] || [ "$(grep -c "^ks_workloads()" <<<"$out")" -ne 1 ]; then
    echo "FAIL qemu --dry-run: a patch that applies: exit $code; output: $out"; failures=$((failures + 1))
  elif [ -n "$(ls -A "$tmp/cache")" ]; then
    echo "FAIL qemu --dry-run wrote to the kernel cache: $(ls -A "$tmp/cache")"; failures=$((failures + 1))
  else
    echo "ok   qemu --dry-run: a patch that applies: $(grep -F 'to build' <<<"$out" | tail -n1)"
  fi
  # A patch naming ../../../X is checked without copying X out of the tree: with the source
  # unpacked in the cache, that copy would land outside the scratch directory (at /X).
  sha=$(git -C "$tmp/tree" rev-parse HEAD)
  mkdir -p "$tmp/cache2/source/$sha/tree"
  cp "$tmp/tree/Makefile" "$tmp/tree/f.c" "$tmp/cache2/source/$sha/tree/"
  printf '{"kind": "git", "version": "6.1.0"}\n' >"$tmp/cache2/source/$sha/source.json"
  escape=ks-escape-$$
  echo x >"$tmp/cache2/$escape"
  printf -- '--- a/../../../%s\n+++ b/../../../%s\n@@ -1 +1 @@\n-x\n+y\n' "$escape" "$escape" >"$tmp/escapes.patch"
  python3 -c 'import json, sys; d = sys.argv[1]; json.dump({"name": "t", "backend": "qemu", "storage": {"kind": "brd", "size_mib": 256}, "source": {"kind": "git", "path": d + "/tree", "commit": "HEAD"}, "arms": {"control": {}, "patched": {"patches": [d + "/escapes.patch"]}}, "workloads": [{"name": "clone"}]}, open(d + "/qemu-escapes.json", "w"))' "$tmp"
  expect_error "qemu --dry-run: a patch naming ../../../X" "does not apply" -- env KSANDWICH_CACHE="$tmp/cache2" "$ks" run "$tmp/qemu-escapes.json" --dry-run
  for planted in "/$escape" "/tmp/$escape" "$tmp/$escape"; do
    if [ -e "$planted" ]; then
      echo "FAIL a patch's ../ name copied a file out of the tree: $planted"; failures=$((failures + 1)); rm -f "$planted"
    fi
  done
  expect_error "qemu: a storage kind the guest cannot have" "not available on the qemu backend" -- "$ks" run "$tmp/qemu-zram.json" --out "$tmp/o11"
  expect_error "qemu: a brd larger than the guest" "does not fit in a guest" -- "$ks" run "$tmp/qemu-brd-too-big.json" --out "$tmp/o12"
else
  echo "SKIPPED (part): the qemu cases need qemu-system-x86_64, busybox-static and btrfs-progs"
fi
# --- Issue 11: hostile experiment files and paths. Every refusal: exit 2, what was wrong,
# and nothing written (no output directory, no file outside it).
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
base = {"name": "t", "arms": {"control": {}, "patched": {}}, "workloads": [{"name": "clone"}]}
def write(name, e):
    with open(f"{d}/{name}.json", "w") as f:
        json.dump(e, f)
write("ok", base)
write("label-traversal", dict(base, workloads=[{"name": "buffered-write", "label": "../../../../" + d + "/x/escaped", "size_mib": 8}]))
write("label-absolute", dict(base, workloads=[{"name": "buffered-write", "label": d + "/x/abs", "size_mib": 8}]))
write("fio-traversal", dict(base, workloads=[{"name": "fio", "job": "../../../../etc/hostname"}]))
open(f"{d}/knob.txt", "w").write("v0\n")
write("sysfs-escape", dict(base, arms={"control": {}, "patched": {"sysfs": {"/sys/.." + d + "/knob.txt": "v"}}}))
for name, ptr, value in [("ops-1e30", ("workloads", 0, "ops"), 1e30), ("rounds-2p32", ("rounds",), 2**32),
                         ("rounds-1e12", ("rounds",), 10**12), ("warmup-neg", ("warmup_rounds",), -1),
                         ("timeout-2p32", ("point_timeout_s",), 2**32), ("blocks-2p32", ("blocks",), 2**32),
                         ("ops-frac", ("workloads", 0, "ops"), 2.5), ("cpu-frac", ("cpu",), 0.5),
                         ("seed-neg", ("seed",), -1), ("storage-tiny", ("storage", "size_mib"), 1)]:
    e = json.loads(json.dumps(base))
    if ptr[0] == "workloads": e["workloads"][0][ptr[2]] = value
    elif ptr[0] == "storage": e["storage"] = {ptr[1]: value}
    else: e[ptr[0]] = value
    write(name, e)
write("device-with-auto", dict(base, storage={"kind": "auto", "device": "/dev/sda"}))
text = json.dumps(base)
open(f"{d}/nul-raw.json", "wb").write(text.encode() + b"\0" + b'{"rounds": 0}')
open(f"{d}/nul-escaped.json", "w").write(text.replace('"name": "t"', '"name": "t\\u0000x"'))
open(f"{d}/duplicate-key.json", "w").write('{"rounds": 5, "rounds": 0, ' + text[1:])
open(f"{d}/deep.json", "w").write('{"name": "t", "_x": ' + "[" * 100000 + "]" * 100000 + "}")
open(f"{d}/deep-bundle.json", "w").write('{"schema_version": 1, "x": ' + "[" * 100000 + "]" * 100000 + "}")
PY
: >"$tmp/empty-file"
ln -s "$tmp/nowhere/at/all" "$tmp/dangling"
expect_error "label: traversal" "/workloads/0/label" -- "$ks" run "$tmp/label-traversal.json" --out "$tmp/out-1"
expect_error "label: absolute" "/workloads/0/label" -- "$ks" run "$tmp/label-absolute.json" --out "$tmp/out-2"
expect_error "label: traversal in --dry-run" "/workloads/0/label" -- "$ks" run "$tmp/label-traversal.json" --dry-run --out "$tmp/out-3"
expect_error "fio job: traversal" "/workloads/0/job" -- "$ks" run "$tmp/fio-traversal.json" --out "$tmp/out-4"
expect_error "sysfs: escapes /sys" "/arms/patched/sysfs" -- "$ks" run "$tmp/sysfs-escape.json" --out "$tmp/out-5"
if [ -e "$tmp/x" ]; then echo "FAIL: a label wrote outside the mount: $tmp/x"; failures=$((failures + 1)); fi
if [ "$(cat "$tmp/knob.txt")" != "v0" ]; then echo "FAIL: the escaped knob was written"; failures=$((failures + 1)); fi
expect_error "--out: an empty file" "is not a directory" -- "$ks" run "$tmp/ok.json" --out "$tmp/empty-file"
expect_error "--out: a dangling symlink" "symbolic link to nothing" -- "$ks" run "$tmp/ok.json" --out "$tmp/dangling"
expect_error "--out: under /proc" "is under /proc" -- "$ks" run "$tmp/ok.json" --out /proc/ksandwich-x
expect_error "--out: under /sys" "is under /sys" -- "$ks" run "$tmp/ok.json" --out /sys/kernel/ksandwich-x
expect_error "--out: /dev/null" "/dev/null" -- "$ks" run "$tmp/ok.json" --out /dev/null
expect_error "--resume: a dangling symlink" "symbolic link to nothing" -- "$ks" run --resume "$tmp/dangling"
if [ -s "$tmp/empty-file" ] || [ -e "$tmp/nowhere" ] || [ -e /proc/ksandwich-x ]; then
  echo "FAIL: a refused --out was written to"; failures=$((failures + 1))
fi
expect_error "JSON: nested 100000 deep" "deeper than 64" -- "$ks" run "$tmp/deep.json" --out "$tmp/out-6"
expect_error "JSON: a raw NUL byte" "NUL byte" -- "$ks" run "$tmp/nul-raw.json" --out "$tmp/out-7"
expect_error "JSON: \\u0000 in a string" "NUL character" -- "$ks" run "$tmp/nul-escaped.json" --out "$tmp/out-8"
expect_error "JSON: a duplicate key" "appears twice" -- "$ks" run "$tmp/duplicate-key.json" --out "$tmp/out-9"
expect_error "validate: a bundle nested 100000 deep" "deeper than 64" -- "$ks" validate "$tmp/deep-bundle.json"
expect_error "report: a bundle nested 100000 deep" "deeper than 64" -- "$ks" report "$tmp/deep-bundle.json"
n=10
for case in "ops-1e30 /workloads/0/ops" "rounds-2p32 /rounds" "rounds-1e12 /rounds" "warmup-neg /warmup_rounds" \
            "timeout-2p32 /point_timeout_s" "blocks-2p32 /blocks" "ops-frac /workloads/0/ops" "cpu-frac /cpu" \
            "seed-neg /seed" "storage-tiny /storage/size_mib" "device-with-auto /storage/device"; do
  set -- $case
  expect_error "number/key: $1" "experiment: $2:" -- "$ks" run "$tmp/$1.json" --out "$tmp/out-$n"
  n=$((n + 1))
done
if [ "$(id -u)" -eq 0 ] && command -v losetup >/dev/null; then
  # A device holding random data (no signature) and no allow_overwrite: refused, untouched.
  decoy=$(mktemp /dev/shm/kstest-cli-decoy-XXXXXX)
  head -c $((160 << 20)) /dev/urandom >"$decoy"
  sum_before=$(sha256sum <"$decoy")
  loopdev=$(losetup --find --show "$decoy")
  python3 -c "import json,sys; json.dump({'name': 't', 'arms': {'control': {}, 'patched': {}}, 'workloads': [{'name': 'clone', 'ops': 10}], 'rounds': 1, 'storage': {'kind': 'device', 'device': sys.argv[1]}}, open(sys.argv[2], 'w'))" "$loopdev" "$tmp/decoy.json"
  expect_error "device: random data, no allow_overwrite" "allow_overwrite" -- "$ks" run "$tmp/decoy.json" --out "$tmp/out-decoy"
  losetup --detach "$loopdev"
  if [ "$(sha256sum <"$decoy")" != "$sum_before" ]; then echo "FAIL: the decoy device was written"; failures=$((failures + 1)); fi
  rm -f "$decoy"
else
  echo "SKIPPED (part): the random-data device case needs root and losetup"
fi
for o in "$tmp"/out-*; do
  if [ -e "$o" ]; then echo "FAIL: refused run left $o behind"; failures=$((failures + 1)); fi
done

# --- Issue 27 (D13-D15): bundles someone else prepared. Each reader refuses what is not
# one bundle a run wrote: exit 2, one clear line, whatever the size or kind of file.
gz="$KS_SOURCE_DIR/tests/data/default-confirm.bundle.json.gz"
cat "$gz" "$gz" >"$tmp/two-members.json.gz"
{ cat "$gz"; printf 'trailing garbage'; } >"$tmp/trailing.json.gz"
python3 - "$bundle" "$tmp" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
json.dump(dict(b, schema_version=99), open(f"{sys.argv[2]}/schema-99.json", "w"))
json.dump(dict(b, verdict="MAYBE"), open(f"{sys.argv[2]}/verdict-maybe.json", "w"))
PY
mkfifo "$tmp/fifo.json"
for cmd in report junit validate analyze; do
  expect_error "$cmd: a gzip of two members" "more than one gzip stream" -- "$ks" $cmd "$tmp/two-members.json.gz"
  expect_error "$cmd: bytes after the gzip stream" "more than one gzip stream" -- "$ks" $cmd "$tmp/trailing.json.gz"
  expect_error "$cmd: a FIFO (must not block)" "not a regular file" -- timeout 20 "$ks" $cmd "$tmp/fifo.json"
  expect_error "$cmd: /dev/zero (must not read forever)" "not a regular file" -- timeout 20 "$ks" $cmd /dev/zero
done
for cmd in junit "compare $bundle" report; do
  # shellcheck disable=SC2086
  expect_error "${cmd%% *}: schema_version 99" "schema_version" -- "$ks" $cmd "$tmp/schema-99.json"
  # shellcheck disable=SC2086
  expect_error "${cmd%% *}: verdict MAYBE" "MAYBE" -- "$ks" $cmd "$tmp/verdict-maybe.json"
done
# A 1 MB gzip that inflates to 1 GiB: refused once it passes the bound, in bounded memory.
head -c $((1 << 30)) /dev/zero | gzip -1 >"$tmp/bomb.json.gz"
out=$( (ulimit -v 1000000; "$ks" report "$tmp/bomb.json.gz") 2>&1)
code=$?
if [ "$code" -ne 2 ] || ! grep -qF "inflates to more than" <<<"$out"; then
  echo "FAIL gzip bomb under a 1 GB address-space limit: exit $code: $out"; failures=$((failures + 1))
else
  echo "ok   gzip bomb: $(head -n1 <<<"$out")"
fi

# --- Issue 27, second attack: output directories someone else can change, the state
# directory, and control characters of a file reaching the terminal through an error.
expect_error "--out under /run/ksandwich" "journal key" -- "$ks" junit "$bundle" --out /run/ksandwich/x.xml
expect_error "series --out under /run/ksandwich" "journal key" -- "$ks" series "$KS_SOURCE_DIR/configs/experiments/default.json" --mbox "$KS_SOURCE_DIR/kernel-patches/btrfs-noop-comment.patch" --out /run/ksandwich/s
if [ "$(id -u)" -eq 0 ]; then
  mkdir -p "$tmp/theirs/sink"
  ln -s "$tmp/theirs/sink" "$tmp/theirs/patches"
  chown -hR nobody "$tmp/theirs"
  expect_error "series --out: a directory another user owns (links planted in it)" "belongs to uid" -- \
    "$ks" series "$KS_SOURCE_DIR/configs/experiments/default.json" --mbox "$KS_SOURCE_DIR/kernel-patches/btrfs-noop-comment.patch" --out "$tmp/theirs"
  if command -v sbatch >/dev/null; then
    expect_error "submit --dir: inside a directory another user owns" "belongs to uid" -- \
      "$ks" submit --slurm "$KS_SOURCE_DIR/configs/experiments/host-aa.json" --dir "$tmp/theirs/sub"
    # Seventieth attack: sbatch expands % in the job logs' path, a place no check looked at.
    expect_error "submit --dir: a % sbatch would expand in the logs' path" "which sbatch would expand" -- \
      "$ks" submit --slurm "$KS_SOURCE_DIR/configs/experiments/host-aa.json" --dir "$tmp/p%u%j"
    if [ -e "$tmp/p%u%j" ]; then echo "FAIL: a refused submit made its directory"; failures=$((failures + 1)); fi
  else
    echo "SKIPPED (part): submit --dir in another user's directory needs sbatch (Slurm's client)"
  fi
  # Third attack: a link in a directory someone else owns (the writer follows the path as
  # given), an existing file there, a history file planted as a link, gather's own directory.
  mkdir -p "$tmp/rootdir" "$tmp/rootonly" && chmod 700 "$tmp/rootonly"
  ln -s "$tmp/rootdir" "$tmp/theirs/link"
  : >"$tmp/theirs/existing.xml"
  ln -s "$tmp/rootonly/new.db" "$tmp/theirs/planted.db"
  chown -h nobody "$tmp/theirs/link" "$tmp/theirs/existing.xml" "$tmp/theirs/planted.db"
  expect_error "junit --out through a link in another user's directory" "belongs to uid" -- \
    "$ks" junit "$bundle" --out "$tmp/theirs/link/out.xml"
  expect_error "junit --out: an existing file in another user's directory" "belongs to uid" -- \
    "$ks" junit "$bundle" --out "$tmp/theirs/existing.xml"
  expect_error "history add --history: a link planted in another user's directory" "belongs to uid" -- \
    "$ks" history add --history "$tmp/theirs/planted.db" "$bundle"
  expect_error "gather: a directory another user owns" "belongs to uid" -- "$ks" gather "$tmp/theirs" --no-wait
  # Fourth attack: a cache another user owns, its threads/ a link: --message-id writes nothing.
  sed '4a Message-ID: <noop@x>' "$KS_SOURCE_DIR/kernel-patches/btrfs-noop-comment.patch" >"$tmp/thread.mbox"
  ln -s "$tmp/theirs/sink" "$tmp/theirs/threads" && chown -h nobody "$tmp/theirs/threads"
  expect_error "run --message-id: a cache another user owns" "belongs to uid" -- env KSANDWICH_CACHE="$tmp/theirs" \
    "$ks" run default --patch "$tmp/thread.mbox" --message-id "<noop@x>" --dry-run --out "$tmp/o-theirs"
  # The whole kernel cache, and ccache's: root builds, boots and kexecs what is there.
  expect_error "build --cache: a cache another user owns" "kernel cache $tmp/theirs: $tmp/theirs belongs to uid" -- \
    "$ks" build --cache "$tmp/theirs" --preflight
  expect_error "run --dry-run: KSANDWICH_CACHE another user owns" "belongs to uid" -- env KSANDWICH_CACHE="$tmp/theirs" \
    "$ks" run default --dry-run --out "$tmp/o-theirs"
  mkdir -p "$tmp/ours" && ln -s "$tmp/theirs/sink" "$tmp/ours/build"
  expect_error "run: a cache of one's own whose build/ is a link" "$tmp/ours/build is a symbolic link" -- \
    env KSANDWICH_CACHE="$tmp/ours" "$ks" run default --dry-run --out "$tmp/o-ours"
  expect_error "build: CCACHE_DIR another user owns" "ccache directory $tmp/theirs: $tmp/theirs belongs" -- env CCACHE_DIR="$tmp/theirs" \
    "$ks" build --preflight
  # Forty-fifth attack: the sudo user's own cache or ccache, or root's cache in a directory of
  # theirs (they could swap a folder for a link between the check and root's chmod or build in
  # it); and a config fragment they could not read themselves, linked or named.
  chmod 755 "$tmp"  # where the sudo user can look: else only that they cannot is said (sixty-sixth)
  expect_error "build --cache: the sudo user's own cache" "kernel cache $tmp/theirs: $tmp/theirs belongs to uid 65534" -- \
    env SUDO_UID=65534 SUDO_GID=65534 "$ks" build --cache "$tmp/theirs" --preflight
  mkdir -p "$tmp/sudo-home" && chown nobody "$tmp/sudo-home" && mkdir -p "$tmp/sudo-home/cache"
  expect_error "build --cache: root's cache in the sudo user's directory" "$tmp/sudo-home belongs to uid 65534" -- \
    env SUDO_UID=65534 SUDO_GID=65534 "$ks" build --cache "$tmp/sudo-home/cache" --preflight
  expect_error "build: the sudo user's CCACHE_DIR" "ccache directory $tmp/theirs: $tmp/theirs belongs to uid 65534" -- \
    env SUDO_UID=65534 SUDO_GID=65534 CCACHE_DIR="$tmp/theirs" "$ks" build --preflight
  printf 'TOPSECRET-root-only-line\n' >"$tmp/secret.config" && chmod 600 "$tmp/secret.config"
  ln -s "$tmp/secret.config" "$tmp/sudo-home/frag.config" && chown -h nobody "$tmp/sudo-home/frag.config"
  for fragment in "$tmp/secret.config" "$tmp/sudo-home/frag.config"; do
    out=$(env SUDO_UID=65534 SUDO_GID=65534 "$ks" build --config-fragment "$fragment" --preflight 2>&1)
    code=$?
    if [ "$code" -ne 2 ] || ! grep -q "who ran sudo, cannot read it" <<<"$out" || grep -q TOPSECRET <<<"$out"; then
      echo "FAIL build read a fragment the sudo user cannot read (exit $code): $out"; failures=$((failures + 1))
    else
      echo "ok   build: a fragment the sudo user cannot read: $(head -n1 <<<"$out")"
    fi
  done
  mkdir -m 700 "$tmp/root-only" && echo root >"$tmp/root-only/file" && chmod 600 "$tmp/root-only/file"
  expect_error "analyze --out: over a root-only file, under sudo" "uid 65534, who ran sudo, cannot write there" -- \
    env SUDO_UID=65534 SUDO_GID=65534 "$ks" analyze "$bundle" --out "$tmp/root-only/file"
  [ "$(cat "$tmp/root-only/file")" = root ] || { echo "FAIL analyze --out replaced a root-only file under sudo"; failures=$((failures + 1)); }
  expect_error "analyze --out: SUDO_UID without SUDO_GID" "SUDO_UID and SUDO_GID must both be set" -- \
    env SUDO_UID=65534 "$ks" analyze "$bundle" --out "$tmp/root-only/sudo-uid-alone.json"
  # ... but a directory root made for them under sudo (marked so) is theirs to continue in
  # (forty-eighth attack: no run could be resumed under sudo), and no other of root's, not even
  # one in a place of theirs (forty-ninth attack: series replaced, and a refused submit deleted,
  # files of root's in any directory of root's that one of theirs led to).
  cp "$KS_SOURCE_DIR/configs/experiments/default.json" "$KS_SOURCE_DIR/kernel-patches/btrfs-noop-comment.patch" \
    "$tmp/sudo-home/"
  if out=$(env SUDO_UID=65534 SUDO_GID=65534 "$ks" series "$tmp/sudo-home/default.json" \
    --mbox "$tmp/sudo-home/btrfs-noop-comment.patch" --out "$tmp/sudo-home/ser" 2>&1); then
    echo "ok   series --out, under sudo: a new directory, made for the user"
  else echo "FAIL series --out, under sudo, a new directory: $out"; failures=$((failures + 1)); fi
  if /usr/bin/python3 -c 'import os, sys; os.setxattr(sys.argv[1], "trusted.ks-probe", b"1"); os.removexattr(sys.argv[1], "trusted.ks-probe")' \
    "$tmp/sudo-home/ser" 2>/dev/null; then
    # Made for them: past the sudo check, to series' own refusal of a second series there.
    expect_error "series --out: the directory it made for the sudo user, again" "already holds a series" -- \
      env SUDO_UID=65534 SUDO_GID=65534 "$ks" series "$tmp/sudo-home/default.json" \
      --mbox "$tmp/sudo-home/btrfs-noop-comment.patch" --out "$tmp/sudo-home/ser"
  else
    echo "SKIPPED (part): continuing under sudo needs trusted attributes, which the file system under $tmp does not keep"
  fi
  mkdir -p "$tmp/sudo-home/roots/patches" "$tmp/sudo-home/roots/experiments" "$tmp/root-only/empty"
  echo root >"$tmp/sudo-home/roots/job.sh" && echo root >"$tmp/sudo-home/roots/patches/0001-btrfs-noop-comment.patch"
  expect_error "series --out: a directory of root's in the user's, under sudo" "uid 65534, who ran sudo, cannot write there" -- \
    env SUDO_UID=65534 SUDO_GID=65534 "$ks" series "$tmp/sudo-home/default.json" \
    --mbox "$tmp/sudo-home/btrfs-noop-comment.patch" --out "$tmp/sudo-home/roots"
  if command -v sbatch >/dev/null; then
    expect_error "submit --dir: a directory of root's in the user's, under sudo" "uid 65534, who ran sudo, cannot write there" -- \
      env SUDO_UID=65534 SUDO_GID=65534 "$ks" submit --slurm --dir "$tmp/sudo-home/roots" "$tmp/sudo-home/default.json"
  else
    echo "SKIPPED (part): submit into a directory of root's under sudo needs sbatch (Slurm's client)"
  fi
  [ "$(cat "$tmp/sudo-home/roots/job.sh" "$tmp/sudo-home/roots/patches/0001-btrfs-noop-comment.patch")" = "root
root" ] || { echo "FAIL under sudo, files of root's in a directory of root's were replaced or removed"; failures=$((failures + 1)); }
  expect_error "run --out: an empty directory of root's, under sudo" "uid 65534, who ran sudo, cannot write there" -- \
    env SUDO_UID=65534 SUDO_GID=65534 "$ks" run default --dry-run --out "$tmp/root-only/empty"
  # Fiftieth attack: whether a file exists where only root can look is not told the sudo user.
  echo '{}' >"$tmp/root-only/exists.json"
  tell_apart() {  # ARGS... with NAME for the file: does the sudo user learn whether it is there?
    local said=() name
    for name in exists.json missing.json; do
      said+=("$(env SUDO_UID=65534 SUDO_GID=65534 "$ks" "${@//NAME/$tmp/root-only/$name}" 2>&1 | sed "s/$name/NAME/g")")
    done
    if [ "${said[0]}" = "${said[1]}" ]; then echo "ok   $1, under sudo: a file where only root looks, there or not: ${said[0]%%$'\n'*}"
    else echo "FAIL $1, under sudo, tells a file where only root looks from none: ${said[0]} / ${said[1]}"; failures=$((failures + 1)); fi
  }
  tell_apart run NAME --dry-run --out "$tmp/sudo-home/o-run"
  tell_apart bisect NAME --good a --bad b --out "$tmp/sudo-home/o-bis"
  tell_apart series NAME --mbox "$tmp/sudo-home/btrfs-noop-comment.patch" --out "$tmp/sudo-home/o-ser"
  tell_apart junit "$bundle" --out NAME
  # Sixty-fifth: run's --patch and --source, looked at as root, told them apart too.
  tell_apart run default --patch NAME --dry-run --out "$tmp/sudo-home/o-patch"
  tell_apart run default --source NAME --dry-run --out "$tmp/sudo-home/o-source"
  # Sixty-sixth: build's --source, --config-base and --cache, and nightly's experiment, too.
  tell_apart build --source NAME --preflight
  tell_apart build --config-base NAME --preflight
  tell_apart build --cache NAME --preflight
  tell_apart nightly NAME --history "$tmp/sudo-home/h.sqlite" --dry-run --out "$tmp/sudo-home/o-night"
  # Sixty-seventh: bisect of the sudo user's experiment naming a git tree where only root looks.
  mkdir -p "$tmp/root-only/git-here/.git"
  said=()
  for where in git-here git-none; do
    jq --arg p "$tmp/root-only/$where" '.source = {kind: "git", path: $p, commit: "HEAD"}' \
      "$KS_SOURCE_DIR/configs/experiments/default.json" >"$tmp/sudo-home/bis-$where.json"
    chown nobody "$tmp/sudo-home/bis-$where.json"
    said+=("$(env SUDO_UID=65534 SUDO_GID=65534 "$ks" bisect "$tmp/sudo-home/bis-$where.json" --good a --bad b \
      --out "$tmp/sudo-home/o-bis-$where" 2>&1 | sed "s/$where/WHERE/g")")
  done
  if [ "${said[0]}" = "${said[1]}" ]; then echo "ok   bisect, under sudo: a git tree where only root looks, there or not: ${said[0]%%$'\n'*}"
  else echo "FAIL bisect, under sudo, tells a git tree where only root looks from none: ${said[0]} / ${said[1]}"; failures=$((failures + 1)); fi
  # ... and the series --message-id picks out of the sudo user's own thread was kept in root's
  # cache where they could not read it: their run was refused it.
  cp "$tmp/thread.mbox" "$tmp/sudo-home/thread.mbox" && chown nobody "$tmp/sudo-home/thread.mbox"
  mkdir -p "$tmp/thread-cache"
  if out=$(env SUDO_UID=65534 SUDO_GID=65534 KSANDWICH_CACHE="$tmp/thread-cache" "$ks" run default --patch \
      "$tmp/sudo-home/thread.mbox" --message-id "<noop@x>" --dry-run --out "$tmp/sudo-home/o-thread" 2>&1); then
    echo "ok   run --patch THREAD --message-id, under sudo: the series they chose: ${out%%$'\n'*}"
  else
    echo "FAIL run --patch THREAD --message-id, under sudo: $out"; failures=$((failures + 1))
  fi
  # Fifty-second attack: /proc/PID/root leads into another mount namespace, where the name
  # checked in this one is bound over somewhere else.
  mkdir -p "$tmp/ns-out" "$tmp/ns-victim" && echo precious >"$tmp/ns-victim/v" && echo mine >"$tmp/ns-out/v"
  unshare --mount --propagation private sh -c 'mount --bind "$1" "$2" && echo $$ >"$3" && exec sleep 60' _ \
    "$tmp/ns-victim" "$tmp/ns-out" "$tmp/ns-pid" &
  sleeper=$!
  for _ in $(seq 50); do [ -s "$tmp/ns-pid" ] && break; sleep 0.1; done
  expect_error "junit --out through /proc/PID/root into another mount namespace" "leads somewhere other than" -- \
    "$ks" junit "$bundle" --out "/proc/$(cat "$tmp/ns-pid")/root$tmp/ns-out/v"
  kill "$sleeper" 2>/dev/null; wait "$sleeper" 2>/dev/null
  [ "$(cat "$tmp/ns-victim/v")" = precious ] || { echo "FAIL a write through /proc/PID/root replaced a file elsewhere"; failures=$((failures + 1)); }
  # ... nor reads them root's bundles or histories.
  cp "$bundle" "$tmp/root-only/b.json" && "$ks" history add --history "$tmp/root-only/h.sqlite" "$bundle" >/dev/null
  expect_error "report: a root-only bundle, under sudo" "cannot be read by uid 65534, who ran sudo" -- \
    env SUDO_UID=65534 SUDO_GID=65534 "$ks" report "$tmp/root-only/b.json"
  expect_error "history list: a root-only history, under sudo" "does not exist for uid 65534, who ran sudo" -- \
    env SUDO_UID=65534 SUDO_GID=65534 "$ks" history list --history "$tmp/root-only/h.sqlite"
  # Fifty-ninth attack: build and submit told the sudo user what lay in root's places (a file,
  # a directory or nothing, each its own message). Now the answer is the same.
  mkdir -p "$tmp/root-only/run/logs" && echo junk >"$tmp/root-only/run/logs/journal.jsonl"
  for command in build "submit --slurm" cleanup; do
    there=b.json && [ "$command" = cleanup ] && there=run  # sixtieth attack: cleanup read root's journal for them
    here=$(env SUDO_UID=65534 SUDO_GID=65534 "$ks" $command "$tmp/root-only/$there" 2>&1 | sed "s#$tmp/root-only/$there#P#g")
    gone=$(env SUDO_UID=65534 SUDO_GID=65534 "$ks" $command "$tmp/root-only/none.json" 2>&1 | sed "s#$tmp/root-only/none.json#P#g")
    if [ "$here" != "$gone" ]; then
      echo "FAIL $command under sudo tells a root-only file from none: '$here' / '$gone'"; failures=$((failures + 1))
    else
      echo "ok   $command under sudo: a root-only file and none get one answer: $(head -n1 <<<"$here")"
    fi
  done
  # Forty-seventh attack: a hot journal beside the sudo user's own history names a file of
  # root's as its super-journal, which SQLite's rollback deletes; as the user, it cannot.
  mkdir -p "$tmp/sudo-home/h" && chown nobody "$tmp/sudo-home/h" && echo precious >"$tmp/victim" && chmod 600 "$tmp/victim"
  chmod 755 "$tmp"
  setpriv --reuid=65534 --regid=65534 --clear-groups "$ks" history add --history "$tmp/sudo-home/h/h.sqlite" "$bundle" >/dev/null ||
    { echo "FAIL the sudo user could not make their own history"; failures=$((failures + 1)); }
  setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 - "$tmp/sudo-home/h/h.sqlite-journal" "$tmp/victim" <<'PY'
import struct, sys
out, victim = sys.argv[1], sys.argv[2].encode()
body = b"\x01" * 512  # no journal header: nothing is played back, but the file is hot
body += struct.pack(">I", 0x40000000 // 4096 + 1) + victim  # the super-journal's name
body += struct.pack(">II", len(victim), sum(victim) & 0xffffffff) + bytes.fromhex("d9d505f920a163d7")
open(out, "wb").write(body)
PY
  env SUDO_UID=65534 SUDO_GID=65534 "$ks" history list --history "$tmp/sudo-home/h/h.sqlite" >/dev/null 2>&1
  chmod 700 "$tmp"
  if [ -e "$tmp/victim" ]; then echo "ok   a planted super-journal: root's file left"
  else echo "FAIL a planted journal had root delete a file of root's"; failures=$((failures + 1)); fi
  chmod 700 "$tmp"
  out=$(KSANDWICH_CACHE="$tmp/theirs" "$ks" doctor 2>&1)
  if ! grep -q "^MISSING kernel cache .*belongs to uid" <<<"$out" || [ "$(grep -c "belongs to uid" <<<"$out")" -ne 1 ]; then
    echo "FAIL doctor does not name a cache another user owns, once: $out"; failures=$((failures + 1))
  else
    echo "ok   doctor: $(grep "^MISSING kernel cache" <<<"$out")"
  fi
  # Fifth attack: ".." after a link into another's directory; a cache or an --out that does
  # not exist yet in a directory others may write to (they could make it first, as a link);
  # an experiment someone else wrote naming the device root formats.
  mkdir -p "$tmp/rd" "$tmp/theirs/sub" "$tmp/shared" && chown nobody "$tmp/theirs/sub" && chmod 1777 "$tmp/shared"
  ln -s "$tmp/theirs/sub" "$tmp/rd/link"
  expect_error "KSANDWICH_CACHE: .. after a link into another's directory" "$tmp/theirs belongs to uid" -- \
    env KSANDWICH_CACHE="$tmp/rd/link/../cache" "$ks" run default --dry-run --out "$tmp/o-dotdot"
  expect_error "KSANDWICH_CACHE: a new cache in a shared directory" "$tmp/shared lets others write in it" -- \
    env KSANDWICH_CACHE="$tmp/shared/cache" "$ks" run default --dry-run --out "$tmp/o-shared-cache"
  expect_error "run --out: a new directory in a shared directory" "$tmp/shared lets others write in it" -- \
    "$ks" run default --dry-run --out "$tmp/shared/run"
  expect_error "history add --history: a new database in a shared directory" "$tmp/shared lets others write in it" -- \
    "$ks" history add --history "$tmp/shared/h.db" "$bundle"
  : >"$tmp/theirs-h.db" && chown nobody "$tmp/theirs-h.db"
  expect_error "history add --history: a database another user owns" "$tmp/theirs-h.db belongs to uid" -- \
    "$ks" history add --history "$tmp/theirs-h.db" "$bundle"
  cp "$tmp/missing-device.json" "$tmp/theirs-device.json" && chown nobody "$tmp/theirs-device.json"
  expect_error "run: an experiment another user wrote names a device" "root builds and runs what it says" -- \
    "$ks" run "$tmp/theirs-device.json" --dry-run --out "$tmp/o-theirs-device"
  if [ -e "$tmp/o-theirs" ] || [ -e "$tmp/o-ours" ] || [ -e "$tmp/shared/cache" ] || [ -e "$tmp/shared/run" ] ||
     [ -e "$tmp/o-dotdot" ] || [ -e "$tmp/o-shared-cache" ] || [ -e "$tmp/o-theirs-device" ] ||
     [ -e "$tmp/shared/h.db" ] || [ -s "$tmp/theirs-h.db" ]; then
    echo "FAIL: a refused run made its --out or cache"; failures=$((failures + 1))
  fi
  if [ -e "$tmp/rootdir/out.xml" ] || [ -e "$tmp/rootonly/new.db" ]; then
    echo "FAIL: root wrote where a planted link led"; failures=$((failures + 1))
  fi
  if [ -n "$(ls -A "$tmp/theirs/sink")" ]; then echo "FAIL: root wrote through a planted link"; failures=$((failures + 1)); fi
  # Sixth attack: the bare-metal state directory (root's boot hook resumes the run named in its
  # `pending`), a series directory another user can change (the Slurm jobs read its experiments
  # when they start), and earlier measurements bisect would take as its own.
  mkdir -p "$tmp/bm-theirs" "$tmp/bm-fifo" "$tmp/bm-link" "$tmp/bm-esc" && chown nobody "$tmp/bm-theirs"
  expect_error "baremetal status: a state directory another user owns" "bare-metal state directory $tmp/bm-theirs: $tmp/bm-theirs belongs to uid" -- \
    env KSANDWICH_BAREMETAL_STATE="$tmp/bm-theirs" "$ks" baremetal status
  expect_error "baremetal install: a state directory another user owns" "$tmp/bm-theirs belongs to uid" -- \
    env KSANDWICH_BAREMETAL_STATE="$tmp/bm-theirs" "$ks" baremetal install --unit-dir "$tmp/bm-units-theirs"
  mkfifo "$tmp/bm-fifo/pending"
  expect_error "baremetal resume: a FIFO for pending (it would hang the boot)" "not a regular file" -- \
    env KSANDWICH_BAREMETAL_STATE="$tmp/bm-fifo" timeout 20 "$ks" baremetal resume
  ln -s /etc/shadow "$tmp/bm-link/pending"
  expect_error "baremetal status: pending is a link" "symbolic link" -- \
    env KSANDWICH_BAREMETAL_STATE="$tmp/bm-link" "$ks" baremetal status
  printf '/x\033]0;PWNED\a\033[2J\n' >"$tmp/bm-esc/pending"
  out=$(KSANDWICH_BAREMETAL_STATE="$tmp/bm-esc" "$ks" baremetal status 2>&1)
  if grep -q $'\x1b' <<<"$out" || [ -e "$tmp/bm-units-theirs" ]; then
    echo "FAIL baremetal status printed escapes, or install wrote a unit: $(cat -v <<<"$out")"; failures=$((failures + 1))
  else
    echo "ok   baremetal status: $(head -n1 <<<"$out" | cut -c1-80)"
  fi
  "$ks" series "$KS_SOURCE_DIR/configs/experiments/default.json" --mbox "$KS_SOURCE_DIR/kernel-patches/btrfs-noop-comment.patch" \
    --out "$tmp/ser-theirs" >/dev/null 2>&1 && chown -R nobody "$tmp/ser-theirs"
  if command -v sbatch >/dev/null; then
    expect_error "submit: a series directory another user can change" "series directory $tmp/ser-theirs: $tmp/ser-theirs belongs to uid" -- \
      "$ks" submit --slurm "$tmp/ser-theirs" --dir "$tmp/sub-mine"
  else
    echo "SKIPPED (part): submit of another user's series directory needs sbatch (Slurm's client)"
  fi
  expect_error "bisect --measured: a directory another user can change" "--measured $tmp/ser-theirs: $tmp/ser-theirs belongs to uid" -- \
    "$ks" bisect "$KS_SOURCE_DIR/configs/experiments/nightly-git.json" --good a --bad b --measured "$tmp/ser-theirs" --out "$tmp/bis-mine"
  # Twenty-seventh attack: a bisect state that concludes what nothing measured (a first bad
# commit, a candidate "bad" with no run) is refused, and so is a state file that is a FIFO.
if command -v git >/dev/null && command -v jq >/dev/null; then
  repo="$tmp/bis-repo"
  mkdir "$repo" && git -C "$repo" init -q
  for i in 1 2 3 4; do
    echo "$i" >"$repo/f" && git -C "$repo" add f && git -C "$repo" -c user.name=t -c user.email=t@t commit -qm "commit $i"
  done
  jq --arg r "$repo" '.source.path = $r | .source.commit = "HEAD"' "$KS_SOURCE_DIR/configs/experiments/nightly-git.json" >"$tmp/bis.json"
  mkdir "$tmp/bis-forged"
  python3 - "$tmp/bis-forged" "$tmp/bis.json" "$repo" <<'PY'
import hashlib, json, subprocess, sys
out, exp, repo = sys.argv[1:]
git = lambda *a: subprocess.run(["git", "-C", repo, *a], check=True, capture_output=True, text=True).stdout.strip()
sha = lambda rev: git("rev-parse", rev)
commits = [{"sha": c, "subject": ""} for c in git("rev-list", "--reverse", "--first-parent", "HEAD~3..HEAD").split()]
bad, second = commits[-1]["sha"], commits[0]["sha"]
effect = {"workload": "clone", "metric": "ns_per_op", "verdict": "REGRESSION", "ratio": 1.2, "low": 1.1, "high": 1.3,
          "has_interval": True, "blocks": 6}
step = lambda i, role, c: {"role": role, "commit": c, "dir": f"{out}/steps/{i:02}-{c[:12]}", "verdict": "bad",
                           "run_exit": 1, "effects": [effect]}
state = {"version": 1, "experiment": exp, "experiment_sha256": hashlib.sha256(open(exp, "rb").read()).hexdigest(),
         "repo": repo, "good": {"sha": sha("HEAD~3"), "subject": ""}, "bad": {"sha": bad, "subject": ""},
         "commits": commits, "steps": [step(0, "initial", bad), step(1, "candidate", second)],
         "status": "found", "first_bad": second, "suspects": []}
json.dump(state, open(f"{out}/bisect.json", "w"))
PY
  out=$("$ks" bisect "$tmp/bis.json" --good HEAD~3 --bad HEAD --out "$tmp/bis-forged" 2>&1)
  code=$?
  if [ "$code" -ne 2 ] || grep -q "first bad commit" <<<"$out" || [ -e "$tmp/bis-forged/reply.txt" ]; then
    echo "FAIL bisect took a forged conclusion (exit $code): $out"; failures=$((failures + 1))
  else
    echo "ok   bisect: a state concluding what nothing measured: $(head -n1 <<<"$out")"
  fi
  # Twenty-eighth attack: the same, with another run's real bundle in each step's directory.
  jq -r '.steps[].dir' "$tmp/bis-forged/bisect.json" | while read -r dir; do mkdir -p "$dir" && cp "$bundle" "$dir/bundle.json"; done
  expect_error "bisect: a state whose steps hold another experiment's bundles" "bundle is of another experiment" -- \
    "$ks" bisect "$tmp/bis.json" --good HEAD~3 --bad HEAD --out "$tmp/bis-forged"
  [ ! -e "$tmp/bis-forged/reply.txt" ] || { echo "FAIL bisect wrote a reply from another experiment's bundles"; failures=$((failures + 1)); }
  # ... and with bundles of the very experiment each step runs, of kernels built from elsewhere.
  "$ks" bisect "$tmp/bis.json" --good HEAD~3 --bad HEAD --write-experiments "$tmp/bis-steps" >/dev/null
  jq -r '.steps[].dir' "$tmp/bis-forged/bisect.json" | while read -r dir; do
    jq --slurpfile e "$(ls "$tmp"/bis-steps/*-"${dir##*-}".json)" '.experiment = $e[0]' "$bundle" >"$dir/bundle.json"
  done
  expect_error "bisect: a state whose steps hold bundles of other kernels" "measured other kernels than good and" -- \
    "$ks" bisect "$tmp/bis.json" --good HEAD~3 --bad HEAD --out "$tmp/bis-forged"
  mkdir "$tmp/bis-fifo" && mkfifo "$tmp/bis-fifo/bisect.json"
  expect_error "bisect: a state file that is a FIFO" "not a regular file" -- \
    timeout 20 "$ks" bisect "$tmp/bis.json" --good HEAD~3 --bad HEAD --out "$tmp/bis-fifo"
  # Good and bad of the same tree: refused with nothing written.
  git -C "$repo" -c user.name=t -c user.email=t@t commit -q --allow-empty -m "no change"
  expect_error "bisect: good and bad of the same tree" "same tree: nothing to bisect" -- \
    "$ks" bisect "$tmp/bis.json" --good HEAD~1 --bad HEAD --out "$tmp/bis-same"
  [ ! -e "$tmp/bis-same" ] || { echo "FAIL bisect of the same tree left $tmp/bis-same"; failures=$((failures + 1)); }
  # Forty-eighth attack: under sudo, a git source the user can read unpacks (the git directory
  # root makes in its cache to read the objects through is not the user's to read), and stops
  # only where it would as root, at the missing kernel Makefile.
  chmod 755 "$tmp"
  out=$(env SUDO_UID=65534 SUDO_GID=65534 KSANDWICH_CACHE="$tmp/sudo-cache" "$ks" build "$tmp/bis.json" --arm control 2>&1)
  chmod 700 "$tmp"
  if grep -q "is not a kernel source: no Makefile" <<<"$out"; then echo "ok   build under sudo: a git source is unpacked"
  else echo "FAIL build under sudo did not unpack a git source: $out"; failures=$((failures + 1)); fi
else
  echo "SKIPPED (part): a forged bisect state needs git and jq"
fi
# Seventh attack: what KSANDWICH_HOME and KSANDWICH_AGENT name, root runs (fio jobs, patches,
  # the agent); a state path with a space would be split by systemd.
  mkdir -p "$tmp/home-theirs" && cp -r "$KS_SOURCE_DIR/configs" "$KS_SOURCE_DIR/kernel-patches" \
    "$KS_SOURCE_DIR/results-schema" "$KS_SOURCE_DIR/workloads" "$tmp/home-theirs/" && chown -R nobody "$tmp/home-theirs"
  cp "$agent" "$tmp/agent-theirs" && chown nobody "$tmp/agent-theirs"
  expect_error "KSANDWICH_HOME another user owns" "KSANDWICH_HOME=$tmp/home-theirs: $tmp/home-theirs belongs to uid" -- \
    env KSANDWICH_HOME="$tmp/home-theirs" "$ks" run host-fio --dry-run --out "$tmp/o-home"
  expect_error "KSANDWICH_AGENT another user owns" "KSANDWICH_AGENT=$tmp/agent-theirs: $tmp/agent-theirs belongs to uid" -- \
    env KSANDWICH_AGENT="$tmp/agent-theirs" "$ks" run host-fio --dry-run --out "$tmp/o-agent"
  mkdir -p "$tmp/st ate"
  expect_error "baremetal install: a state path with a space" "holds a space, a quote, a \$, a control character or a %" -- \
    env KSANDWICH_BAREMETAL_STATE="$tmp/st ate/bm" "$ks" baremetal install --unit-dir "$tmp/units-space"
  if [ -e "$tmp/o-home" ] || [ -e "$tmp/o-agent" ] || [ -e "$tmp/units-space" ] || [ -e "$tmp/st ate/bm" ]; then
    echo "FAIL: a refused command made its output"; failures=$((failures + 1))
  fi
  # Eighth attack: a link another user owns, in a sticky directory, to a directory of root's
  # passes every check of its target; its owner could point it elsewhere later.
  mkdir -p "$tmp/sticky" && chmod 1777 "$tmp/sticky" && ln -s "$KS_SOURCE_DIR" "$tmp/sticky/lnk" && chown -h nobody "$tmp/sticky/lnk"
  expect_error "KSANDWICH_HOME through a link another user owns" "$tmp/sticky/lnk is a symbolic link that belongs to uid" -- \
    env KSANDWICH_HOME="$tmp/sticky/lnk" "$ks" run host-fio --dry-run --out "$tmp/o-lnk"
  # Ninth attack: what root builds from, found in a directory others may write to. A file named
  # like a shipped experiment in the current directory, a patch planted beside root's own
  # experiment, a source tarball named relative to the experiment but planted in the current
  # directory: refused, or not looked for there.
  mkdir -p "$tmp/sticky2" && chmod 1777 "$tmp/sticky2"
  cp "$KS_SOURCE_DIR/configs/experiments/host-fio.json" "$tmp/sticky2/default" && chown nobody "$tmp/sticky2/default"
  # Sixty-fourth: the shipped name first, so that file no longer refuses the README's `run default`.
  out=$(cd "$tmp/sticky2" && "$ks" run default --dry-run --out "$tmp/o-planted" 2>&1)
  code=$?
  if [[ $code -ne 0 || $out != "experiment default: backend qemu"* ]]; then
    echo "FAIL run default beside another user's file named default: exit $code; output: $out"; failures=$((failures + 1))
  else
    echo "ok   run default beside another user's file named default: the shipped experiment"
  fi
  expect_error "run ./default: the file of that name, another user's" "$tmp/sticky2/default belongs to uid" -- \
    sh -c "cd '$tmp/sticky2' && exec '$ks' run ./default --dry-run --out '$tmp/o-planted'"
  cp "$KS_SOURCE_DIR/configs/experiments/default.json" "$tmp/sticky2/mine.json"
  cp "$KS_SOURCE_DIR/kernel-patches/btrfs-drop-sb-nosec.patch" "$tmp/sticky2/" && chown nobody "$tmp/sticky2/btrfs-drop-sb-nosec.patch"
  expect_error "run: a patch another user planted beside root's experiment" "patch file $tmp/sticky2/btrfs-drop-sb-nosec.patch: $tmp/sticky2/btrfs-drop-sb-nosec.patch belongs to uid" -- \
    "$ks" run "$tmp/sticky2/mine.json" --dry-run --out "$tmp/o-planted-patch"
  # Fifty-third to fifty-fifth attacks: programs another user put in a directory on root's PATH
  # (".", theirs) ran as root, in ksandwich and in what it starts. Root keeps trusted ones only.
  mkdir -p "$tmp/their-bin"
  for tool in modinfo python3 tar; do
    printf '#!/bin/sh\ntouch "%s/ran-%s"\nexit 1\n' "$tmp" "$tool" >"$tmp/their-bin/$tool" && chmod 755 "$tmp/their-bin/$tool"
  done
  chown -R nobody "$tmp/their-bin"
  (cd "$tmp/their-bin" && PATH=".:$tmp/their-bin:/usr/sbin:/usr/bin:/sbin:/bin" "$ks" doctor >/dev/null 2>&1)
  if compgen -G "$tmp/ran-*" >/dev/null; then
    echo "FAIL doctor ran another user's programs from root's PATH: $(ls "$tmp"/ran-*)"; failures=$((failures + 1))
  else
    echo "ok   doctor: another user's programs on root's PATH (. and their directory) are not run"
  fi
  # Fifty-sixth attack: the rest of root's environment reached what ksandwich starts. BASH_ENV
  # had the `bash -c` that sizes a source tarball source a file of theirs, and TAR_OPTIONS ran
  # a program through tar, both as root. Root passes on only the variables it needs.
  printf 'touch "%s/ran-bash-env"\n' "$tmp" >"$tmp/their-bin/env.sh" && chown nobody "$tmp/their-bin/env.sh"
  mkdir -p "$tmp/env-src/src" && echo x >"$tmp/env-src/src/Makefile" && tar -cJf "$tmp/env-src/linux.tar.xz" -C "$tmp/env-src" src
  jq '.source = {"kind": "tarball", "path": "linux.tar.xz"}' "$KS_SOURCE_DIR/configs/experiments/default.json" >"$tmp/env-src/exp.json"
  out=$(BASH_ENV="$tmp/their-bin/env.sh" TAR_OPTIONS="--checkpoint=1 --checkpoint-action=exec=touch\\ $tmp/ran-tar-options" \
    "$ks" build "$tmp/env-src/exp.json" --preflight --no-ccache 2>&1)
  if ! grep -qF "is not a kernel source" <<<"$out"; then
    echo "FAIL build of a tarball that is no kernel source did not size and unpack it: $out"; failures=$((failures + 1))
  elif compgen -G "$tmp/ran-*" >/dev/null; then
    echo "FAIL BASH_ENV or TAR_OPTIONS of root's reached what ksandwich starts: $(ls "$tmp"/ran-*)"; failures=$((failures + 1))
  else
    echo "ok   build: BASH_ENV and TAR_OPTIONS naming another user's file or program do not reach bash and tar"
  fi
  # Fifty-sixth attack: the KVM probe opened read-write, as root, whatever KSANDWICH_KVM_DEVICE named.
  : >"$tmp/their-bin/kvm" && chown nobody "$tmp/their-bin/kvm"
  expect_error "doctor: KSANDWICH_KVM_DEVICE names another user's file" "KSANDWICH_KVM_DEVICE=$tmp/their-bin/kvm: $tmp/their-bin belongs to uid 65534" -- \
    env KSANDWICH_KVM_DEVICE="$tmp/their-bin/kvm" "$ks" doctor
  chown -R root "$tmp/their-bin" && chmod 755 "$tmp/their-bin"
  expect_error "doctor: KSANDWICH_KVM_DEVICE names a regular file of root's" "$tmp/their-bin/kvm is not a character device of root's" -- \
    env KSANDWICH_KVM_DEVICE="$tmp/their-bin/kvm" "$ks" doctor
  chown -R nobody "$tmp/their-bin"
  # Fifty-eighth attack: `submit --slurm` hashed the patches its jobs will build, as root,
  # wherever they were, without bound (a sparse 16 GB file of another user's held it past
  # SIGTERM). It reads them as `build` does: another user's is refused before any job is made.
  mkdir -p "$tmp/root-bin" && printf '#!/bin/sh\necho "Submitted batch job 1"\n' >"$tmp/root-bin/sbatch" && chmod 755 "$tmp/root-bin/sbatch"
  truncate -s 16G "$tmp/their-bin/big.patch" && chown nobody "$tmp/their-bin/big.patch"
  jq --arg p "$tmp/their-bin/big.patch" '.name = "sub-theirs" | .arms.patched.patches = [$p]' \
    "$KS_SOURCE_DIR/configs/experiments/default.json" >"$tmp/sub-theirs.json"
  expect_error "submit --slurm: a patch in another user's directory" "patch file $tmp/their-bin/big.patch: $tmp/their-bin belongs to uid 65534" -- \
    timeout 20 env PATH="$tmp/root-bin:$PATH" "$ks" submit --slurm "$tmp/sub-theirs.json" --dir "$tmp/sub-theirs"
  # Fifty-third attack: another user's link in a sticky directory led root's bundle readers to
  # a root-only file, quoted in their parse and schema errors. Read as anyone, it is not read.
  mkdir -p "$tmp/root-only" && chmod 700 "$tmp/root-only"
  printf '{"experiment": "TOKEN-53"}\n' >"$tmp/root-only/config.json" && chmod 600 "$tmp/root-only/config.json"
  ln -s "$tmp/root-only/config.json" "$tmp/sticky2/evil.json" && chown -h nobody "$tmp/sticky2/evil.json"
  for reader in validate report junit analyze; do
    out=$("$ks" $reader "$tmp/sticky2/evil.json" 2>&1)
    code=$?
    if [ "$code" -ne 2 ] || grep -qF TOKEN-53 <<<"$out" || ! grep -qF "cannot be read by anyone" <<<"$out"; then
      echo "FAIL $reader: another user's link to a root-only file (exit $code): $out"; failures=$((failures + 1))
    else
      echo "ok   $reader: another user's link to a root-only file is read as anyone: $(head -n1 <<<"$out" | cut -c1-100)"
    fi
  done
  chown -h root "$tmp/sticky2/evil.json"  # the control: root's own link there is followed
  out=$("$ks" validate "$tmp/sticky2/evil.json" 2>&1)
  grep -qF TOKEN-53 <<<"$out" && echo "ok   validate: root's own link is followed" ||
    { echo "FAIL validate: root's own link to its file was not read: $out"; failures=$((failures + 1)); }
  mkdir -p "$tmp/exp-tar" && jq '.source = {"kind": "tarball", "path": "linux.tar.xz"}' \
    "$KS_SOURCE_DIR/configs/experiments/default.json" >"$tmp/exp-tar/exp.json"
  : >"$tmp/sticky2/linux.tar.xz" && chown nobody "$tmp/sticky2/linux.tar.xz"
  out=$(cd "$tmp/sticky2" && "$ks" build "$tmp/exp-tar/exp.json" --preflight --no-ccache 2>&1)
  code=$?
  if [ "$code" -ne 2 ] || grep -qF "$tmp/sticky2/linux.tar.xz" <<<"$out"; then
    echo "FAIL build: an experiment's relative source was looked for in the current directory (exit $code): $out"; failures=$((failures + 1))
  else
    echo "ok   build: an experiment's relative source is looked for beside it: $(head -n1 <<<"$out" | cut -c1-100)"
  fi
  cp "$tmp/sticky2/linux.tar.xz" "$tmp/exp-tar/linux.tar.xz" 2>/dev/null; chown nobody "$tmp/exp-tar/linux.tar.xz"
  expect_error "build: a source tarball another user owns" "kernel source $tmp/exp-tar/linux.tar.xz: $tmp/exp-tar/linux.tar.xz belongs to uid" -- \
    "$ks" build "$tmp/exp-tar/exp.json" --preflight --no-ccache
  if [ -e "$tmp/o-planted" ] || [ -e "$tmp/o-planted-patch" ]; then
    echo "FAIL: a refused run made its output"; failures=$((failures + 1))
  fi
  # Tenth attack: another user's link inside the target of root's own link; a git tree another
  # user owns (git would run what its config names); a fio job file another user can change
  # inside root's data tree; an ACL that lets another user write a patch.
  mkdir -p "$tmp/rootdir/real" "$tmp/sticky3" && chmod 1777 "$tmp/sticky3"
  cp "$KS_SOURCE_DIR/kernel-patches/btrfs-noop-comment.patch" "$tmp/rootdir/real/s.mbox"
  ln -s "$tmp/rootdir/real" "$tmp/sticky3/alink" && chown -h nobody "$tmp/sticky3/alink"
  ln -s "$tmp/sticky3/alink" "$tmp/rootdir/lnk"
  expect_error "series --mbox through root's link to another user's link" "$tmp/sticky3/alink is a symbolic link that belongs to uid" -- \
    "$ks" series "$KS_SOURCE_DIR/configs/experiments/default.json" --mbox "$tmp/rootdir/lnk/s.mbox" --out "$tmp/o-linklink"
  mkdir -p "$tmp/their-repo" && git -C "$tmp/their-repo" init -q && chown -R nobody "$tmp/their-repo"
  jq --arg p "$tmp/their-repo" '.source = {"kind": "git", "path": $p, "commit": "HEAD"}' \
    "$KS_SOURCE_DIR/configs/experiments/default.json" >"$tmp/git-theirs.json"
  expect_error "run: a git source another user owns" "git source $tmp/their-repo: $tmp/their-repo belongs to uid" -- \
    "$ks" run "$tmp/git-theirs.json" --dry-run --out "$tmp/o-git-theirs"
  mkdir -p "$tmp/home-mixed" && cp -r "$KS_SOURCE_DIR/configs" "$KS_SOURCE_DIR/kernel-patches" \
    "$KS_SOURCE_DIR/results-schema" "$KS_SOURCE_DIR/workloads" "$tmp/home-mixed/" && chown -R nobody "$tmp/home-mixed/workloads/fio"
  expect_error "run: a fio job another user can change" "fio job $tmp/home-mixed/workloads/fio/dio-randwrite.fio" -- \
    env KSANDWICH_HOME="$tmp/home-mixed" "$ks" run host-fio --dry-run --out "$tmp/o-fio-theirs"
  mkdir -p "$tmp/acl" && cp "$KS_SOURCE_DIR/kernel-patches/btrfs-noop-comment.patch" "$tmp/acl/p.patch"
  # setfacl -m u:nobody:rw, written as the kernel's ACL blob (no acl package needed): version 2,
  # then (tag, perm, id) entries: owner rw, user nobody rw, group r, mask rw, other r.
  if python3 -c 'import os, struct, sys
e = [(1, 6, 0xffffffff), (2, 6, 65534), (4, 4, 0xffffffff), (0x10, 6, 0xffffffff), (0x20, 4, 0xffffffff)]
os.setxattr(sys.argv[1], "system.posix_acl_access", struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *x) for x in e))' \
    "$tmp/acl/p.patch" 2>/dev/null; then
    expect_error "run --patch: an ACL lets another user write it" "$tmp/acl/p.patch has an ACL" -- \
      "$ks" run default --patch "$tmp/acl/p.patch" --dry-run --out "$tmp/o-acl"
  else
    echo "SKIPPED (part): this filesystem takes no POSIX ACL"
  fi
  # Seventeenth attack: a default ACL hands what root makes in a directory to another user (a
  # run directory, a submit's job.sh), as does an ACL on a cache's folder; a shared group passed
  # as the sudo user's; another user's --unit-dir, whose unit runs as root at boot.
  acl_blob='import os, struct, sys
e = [(1, 7, 0xffffffff), (2, 7, 65534), (4, 5, 0xffffffff), (0x10, 7, 0xffffffff), (0x20, 5, 0xffffffff)]
os.setxattr(sys.argv[1], sys.argv[2], struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *x) for x in e))'
  mkdir -p "$tmp/dacl" "$tmp/cacl/build" && chmod 755 "$tmp/dacl" "$tmp/cacl" "$tmp/cacl/build"
  if python3 -c "$acl_blob" "$tmp/dacl" system.posix_acl_default 2>/dev/null &&
    python3 -c "$acl_blob" "$tmp/cacl/build" system.posix_acl_access 2>/dev/null; then
    expect_error "run --out under a default ACL" "$tmp/dacl has an ACL" -- \
      "$ks" run default --dry-run --out "$tmp/dacl/o-dacl"
    expect_error "submit --dir under a default ACL" "$tmp/dacl has an ACL" -- \
      "$ks" submit --slurm "$KS_SOURCE_DIR/configs/experiments/default.json" --dir "$tmp/dacl/sub"
    expect_error "a cache whose build/ has an ACL" "others may write to it (an ACL)" -- \
      env KSANDWICH_CACHE="$tmp/cacl" "$ks" run default --dry-run --out "$tmp/o-cacl"
    if [ -n "$(ls -A "$tmp/dacl")" ]; then echo "FAIL: a refused command made $(ls "$tmp/dacl")"; failures=$((failures + 1)); fi
  else
    echo "SKIPPED (part): this filesystem takes no POSIX ACL"
  fi
  # (sub/ writable by that group too: what the user may write is asked first, under sudo)
  mkdir -p "$tmp/shared-group/sub" && chgrp 100 "$tmp/shared-group" "$tmp/shared-group/sub" &&
    chmod 775 "$tmp/shared-group" "$tmp/shared-group/sub"
  chmod 755 "$tmp"
  expect_error "junit --out where the sudo user's shared group may write" "$tmp/shared-group belongs to uid 0 and others may write" -- \
    env SUDO_UID=4242 SUDO_GID=100 "$ks" junit "$bundle" --out "$tmp/shared-group/sub/x.xml"
  chmod 700 "$tmp"
  mkdir -p "$tmp/their-units" "$tmp/bm-decoy" "$tmp/my-units" && chown nobody "$tmp/their-units"
  expect_error "baremetal install --unit-dir of another user's" "$tmp/their-units belongs to uid" -- \
    env KSANDWICH_BAREMETAL_STATE="$tmp/bm-state2" "$ks" baremetal install --unit-dir "$tmp/their-units"
  ln -s "$tmp/bm-decoy" "$tmp/my-units/multi-user.target.wants" && chown -h nobody "$tmp/my-units/multi-user.target.wants"
  expect_error "baremetal uninstall through another user's wants/ link" "is a symbolic link that belongs to uid" -- \
    "$ks" baremetal uninstall --unit-dir "$tmp/my-units"
  rm "$tmp/my-units/multi-user.target.wants" && mkfifo "$tmp/my-units/ksandwich-resume.service"
  expect_error "baremetal uninstall: a FIFO where the unit goes" "was not written by ksandwich" -- \
    timeout 20 "$ks" baremetal uninstall --unit-dir "$tmp/my-units"
  if [ -n "$(find "$tmp/their-units" "$tmp/bm-decoy" -mindepth 1)" ]; then echo "FAIL: a refused baremetal command wrote"; failures=$((failures + 1)); fi
  # Eighteenth attack: a git tree of root's whose .git/config a group may write (git runs what
  # it names: gpg.program, core.fsmonitor); a device named through another user's directory
  # (judged, then formatted by that name later); a "private" group another account has as its
  # primary one; $TMPDIR another user's.
  mkdir -p "$tmp/our-repo" && git -C "$tmp/our-repo" init -q && chgrp nogroup "$tmp/our-repo/.git/config" &&
    chmod 664 "$tmp/our-repo/.git/config"
  jq --arg p "$tmp/our-repo" '.source = {"kind": "git", "path": $p, "commit": "HEAD"}' \
    "$KS_SOURCE_DIR/configs/experiments/default.json" >"$tmp/git-config-shared.json"
  expect_error "run: a git source whose .git/config a group may write" "$tmp/our-repo/.git/config belongs to uid 0 and others may write" -- \
    "$ks" run "$tmp/git-config-shared.json" --dry-run --out "$tmp/o-git-config"
  # Nineteenth attack: git looked above a tree with no .git (another user's bare repository
  # planted in a sticky parent), and took GIT_DIR from root's environment: either way a
  # repository no one checked, whose config names programs. Each of them holds HEAD~1; the
  # tree root named holds one commit, or none.
  commit_in() { git -C "$1" -c user.name=t -c user.email=t@t commit -q --allow-empty -m "$2"; }
  chmod 711 "$tmp"  # nobody may pass through (never list or write) to what is theirs below
  mkdir -p "$tmp/sticky-git" "$tmp/nb-src" && chmod 1777 "$tmp/sticky-git" && chown nobody "$tmp/nb-src"
  setpriv --reuid 65534 --regid 65534 --clear-groups sh -c "cd '$tmp/nb-src' && git init -q --bare planted.git &&
    git clone -q planted.git work 2>/dev/null && cd work && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m one &&
    git -c user.name=t -c user.email=t@t commit -q --allow-empty -m two && git push -q origin HEAD 2>/dev/null &&
    cp -r ../planted.git/HEAD ../planted.git/config ../planted.git/objects ../planted.git/refs '$tmp/sticky-git/'"
  mkdir "$tmp/sticky-git/linux"
  if git -C "$tmp/sticky-git/linux" rev-parse -q --verify 'HEAD~1^{commit}' >/dev/null 2>&1; then
    jq --arg p "$tmp/sticky-git/linux" '.source = {"kind": "git", "path": $p, "commit": "HEAD~1"}' \
      "$KS_SOURCE_DIR/configs/experiments/default.json" >"$tmp/git-above.json"
    expect_error "run: a tree with no .git in a sticky directory another user made a bare repository" "no commit named" -- \
      "$ks" run "$tmp/git-above.json" --dry-run --out "$tmp/o-git-above"
  else
    echo "SKIPPED (part): this git does not find a bare repository above a tree (safe.bareRepository)"
  fi
  mkdir -p "$tmp/one-commit" "$tmp/two-commits" && git -C "$tmp/one-commit" init -q && commit_in "$tmp/one-commit" one &&
    git -C "$tmp/two-commits" init -q && commit_in "$tmp/two-commits" one && commit_in "$tmp/two-commits" two
  jq --arg p "$tmp/one-commit" '.source = {"kind": "git", "path": $p, "commit": "HEAD~1"}' \
    "$KS_SOURCE_DIR/configs/experiments/default.json" >"$tmp/git-env.json"
  expect_error "run: GIT_DIR in root's environment names another repository" "no commit named" -- \
    env GIT_DIR="$tmp/two-commits/.git" "$ks" run "$tmp/git-env.json" --dry-run --out "$tmp/o-git-env"
  # Twentieth attack: a config including a file another user can change, a commondir naming
  # their repository, and $XDG_CONFIG_HOME of theirs: each a configuration git read unchecked.
  mkdir -p "$tmp/their-conf" && chown nobody "$tmp/their-conf" && : >"$tmp/their-conf/evil.conf"
  git -C "$tmp/one-commit" config include.path "$tmp/their-conf/evil.conf"
  expect_error "run: a git config that includes another user's file" "includes other files" -- \
    "$ks" run "$tmp/git-env.json" --dry-run --out "$tmp/o-git-include"
  git -C "$tmp/one-commit" config --unset include.path
  # Twenty-first: the same in config.worktree, which git reads with extensions.worktreeConfig.
  git -C "$tmp/one-commit" config extensions.worktreeConfig true
  git -C "$tmp/one-commit" config --worktree include.path "$tmp/their-conf/evil.conf"
  expect_error "run: a git config.worktree that includes another user's file" "config.worktree includes other files" -- \
    "$ks" run "$tmp/git-env.json" --dry-run --out "$tmp/o-git-include-worktree"
  rm "$tmp/one-commit/.git/config.worktree" && git -C "$tmp/one-commit" config --unset extensions.worktreeConfig
  # Twenty-second: programs the repository's own config names, in another user's directory:
  # gpg.program for log.showSignature (a commit with a gpgsig header), a partial clone's
  # remote.origin.uploadpack (its lazy fetch), a filter (git archive's smudge).
  printf '#!/bin/sh\ntouch %s/PWNED-git\nexec git-upload-pack "$@"\n' "$tmp" >"$tmp/their-conf/prog.sh" && chmod 755 "$tmp/their-conf/prog.sh"
  mkdir -p "$tmp/sig" && git -C "$tmp/sig" init -q && printf 'VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 0\n' >"$tmp/sig/Makefile" &&
    git -C "$tmp/sig" add Makefile && commit_in "$tmp/sig" base
  signed=$(printf 'tree %s\nparent %s\nauthor t <t@t> 946684800 +0000\ncommitter t <t@t> 946684800 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n -----END PGP SIGNATURE-----\n\nsigned\n' \
    "$(git -C "$tmp/sig" rev-parse 'HEAD^{tree}')" "$(git -C "$tmp/sig" rev-parse HEAD)" | git -C "$tmp/sig" hash-object -t commit -w --stdin)
  git -C "$tmp/sig" update-ref refs/heads/signed "$signed" && git -C "$tmp/sig" config log.showSignature true &&
    git -C "$tmp/sig" config gpg.program "$tmp/their-conf/prog.sh"
  jq --arg p "$tmp/sig" '.source = {"kind": "git", "path": $p, "commit": "HEAD"} | .arms.patched = {"commit": "signed"}' \
    "$KS_SOURCE_DIR/configs/experiments/default.json" >"$tmp/sig.json"
  "$ks" run "$tmp/sig.json" --dry-run --out "$tmp/o-sig" >"$tmp/sig.out" 2>&1
  git clone -q "$tmp/sig" "$tmp/upstream" && git -C "$tmp/upstream" config uploadpack.allowFilter true &&
    git -C "$tmp/upstream" config uploadpack.allowAnySHA1InWant true &&
    git clone -q --filter=blob:none --no-checkout "file://$tmp/upstream" "$tmp/partial" &&
    git -C "$tmp/partial" config remote.origin.uploadpack "$tmp/their-conf/prog.sh"
  jq --arg p "$tmp/partial" '.source = {"kind": "git", "path": $p, "commit": "HEAD"}' \
    "$KS_SOURCE_DIR/configs/experiments/default.json" >"$tmp/partial.json"
  "$ks" run "$tmp/partial.json" --dry-run --out "$tmp/o-partial" >"$tmp/partial.out" 2>&1
  if [ -e "$tmp/PWNED-git" ]; then echo "FAIL: git ran a program another user can change (gpg.program, a lazy fetch's uploadpack)"; failures=$((failures + 1))
  elif ! grep -q "then its diff to signed" "$tmp/sig.out" || ! grep -q "$tmp/partial" "$tmp/partial.out"; then
    echo "FAIL: the gpgsig or partial-clone case stopped before git ran: $(tail -n 2 "$tmp/sig.out" "$tmp/partial.out")"; failures=$((failures + 1))
  else echo "ok   git runs no program the config names: a gpgsig commit, a partial clone's missing objects"; fi
  git -C "$tmp/sig" config --unset gpg.program && git -C "$tmp/sig" config filter.x.smudge "$tmp/their-conf/prog.sh"
  expect_error "run: a git config naming a filter program" "names a filter program (filter.x.smudge)" -- \
    "$ks" run "$tmp/sig.json" --dry-run --out "$tmp/o-filter"
  # Twenty-third: a submodule's diff.external (diff.submodule=diff runs git diff there), a
  # mailmap.file that is another user's FIFO (git log read it, and hung), and an object store
  # borrowed from another user's repository (objects/info/alternates).
  git -C "$tmp/sig" config --unset filter.x.smudge
  mkdir -p "$tmp/subsrc" && git -C "$tmp/subsrc" init -q && commit_in "$tmp/subsrc" s1 && commit_in "$tmp/subsrc" s2
  git clone -q "$tmp/sig" "$tmp/super" &&
    git -C "$tmp/super" -c protocol.file.allow=always submodule -q add "$tmp/subsrc" sub 2>/dev/null &&
    git -C "$tmp/super/sub" checkout -q HEAD~1 && git -C "$tmp/super" add sub && commit_in "$tmp/super" addsub &&
    git -C "$tmp/super/sub" checkout -q master 2>/dev/null || git -C "$tmp/super/sub" checkout -q main
  git -C "$tmp/super" add sub && commit_in "$tmp/super" bump && git -C "$tmp/super" config diff.submodule diff &&
    git config --file "$tmp/super/.git/modules/sub/config" diff.external "$tmp/their-conf/prog.sh"
  mkfifo "$tmp/their-conf/mailmap" && chown nobody "$tmp/their-conf/mailmap" &&
    git -C "$tmp/super" config mailmap.file "$tmp/their-conf/mailmap"
  jq --arg p "$tmp/super" '.source = {"kind": "git", "path": $p, "commit": "HEAD~1"} | .arms.patched = {"commit": "HEAD"}' \
    "$KS_SOURCE_DIR/configs/experiments/default.json" >"$tmp/super.json"
  timeout 50 "$ks" run "$tmp/super.json" --dry-run --out "$tmp/o-super" >"$tmp/super.out" 2>&1
  code=$?
  if [ -e "$tmp/PWNED-git" ] || [ "$code" -eq 124 ]; then
    echo "FAIL: a submodule's diff.external ran, or git read a mailmap FIFO (exit $code)"; failures=$((failures + 1))
  elif ! grep -q "its diff to HEAD" "$tmp/super.out"; then
    echo "FAIL: the submodule case did not reach the diff: $(tail -n 3 "$tmp/super.out")"; failures=$((failures + 1))
  else echo "ok   a submodule's diff.external does not run, a mailmap file is not read"; fi
  mkdir -p "$tmp/their-conf/store" && git -C "$tmp/their-conf/store" init -q --bare && chown -R nobody "$tmp/their-conf/store"
  echo "$tmp/their-conf/store/objects" >"$tmp/sig/.git/objects/info/alternates"
  expect_error "run: a git source borrowing another user's object store" "$tmp/their-conf belongs to uid" -- \
    "$ks" run "$tmp/sig.json" --dry-run --out "$tmp/o-alternates"
  rm "$tmp/sig/.git/objects/info/alternates"
  # Twenty-fourth: a commondir or alternates line ending in a space was checked trimmed; git
  # opened the name with the space, another user's beside the checked one.
  printf '%s \n' "$tmp/super/.git" >"$tmp/sig/.git/commondir"
  expect_error "run: a commondir ending in a space" "a path with spaces, controls or quotes at its ends" -- \
    "$ks" run "$tmp/sig.json" --dry-run --out "$tmp/o-commondir-space"
  rm "$tmp/sig/.git/commondir" && printf '%s\r\n' "$tmp/super/.git/objects" >"$tmp/sig/.git/objects/info/alternates"
  expect_error "run: an alternates line ending in CR" "a path with spaces, controls or quotes at its ends" -- \
    "$ks" run "$tmp/sig.json" --dry-run --out "$tmp/o-alternates-cr"
  rm "$tmp/sig/.git/objects/info/alternates"
  # Twenty-fifth: the lab kernel and initrd a bare-metal machine kexecs back into, another user's.
  mkdir -p "$tmp/their-boot" && : >"$tmp/their-boot/vmlinuz" && chown -R nobody "$tmp/their-boot"
  jq --arg k "$tmp/their-boot/vmlinuz" '.baremetal.return = "kexec" | .baremetal.lab_kernel = $k | .baremetal.lab_initrd = ""' \
    "$KS_SOURCE_DIR/configs/experiments/baremetal.json" >"$tmp/their-lab.json"
  expect_error "run: a bare-metal lab kernel of another user's" "$tmp/their-boot belongs to uid" -- \
    "$ks" run "$tmp/their-lab.json" --dry-run --out "$tmp/o-their-lab"
  # And a relative source path with --patch: resolved beside the experiment (not where root
  # stands), and git handed that git directory, not one relative to where git runs.
  mkdir -p "$tmp/rel/exp" "$tmp/rel/linux" && git -C "$tmp/rel/linux" init -q && echo a >"$tmp/rel/linux/README" &&
    printf 'VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 0\n' >"$tmp/rel/linux/Makefile" &&
    git -C "$tmp/rel/linux" add README Makefile && commit_in "$tmp/rel/linux" one
  printf 'diff --git a/README b/README\n--- a/README\n+++ b/README\n@@ -1 +1 @@\n-a\n+b\n' >"$tmp/rel/p.diff"
  jq '.source = {"kind": "git", "path": "../linux", "commit": "HEAD"}' \
    "$KS_SOURCE_DIR/configs/experiments/default.json" >"$tmp/rel/exp/e.json"
  if (cd / && "$ks" run "$tmp/rel/exp/e.json" --patch "$tmp/rel/p.diff" --dry-run --out "$tmp/o-rel" >"$tmp/rel.out" 2>&1); then
    echo "ok   run --patch: a relative source path is resolved beside the experiment"
  else
    echo "FAIL run --patch with a relative source path:"; cat "$tmp/rel.out"; failures=$((failures + 1))
  fi
  echo "$tmp/their-conf" >"$tmp/one-commit/.git/commondir"
  expect_error "run: a commondir naming another user's directory" "$tmp/their-conf belongs to uid" -- \
    "$ks" run "$tmp/git-env.json" --dry-run --out "$tmp/o-git-commondir"
  rm "$tmp/one-commit/.git/commondir"
  mkdir -p "$tmp/their-conf/git" && printf '[alias]\n\trev-parse = !touch %s/PWNED\n[core]\n\tabbrev = 4\n' "$tmp" >"$tmp/their-conf/git/config"
  expect_error "run: \$XDG_CONFIG_HOME of another user's (still one commit, nothing run)" "no commit named" -- \
    env XDG_CONFIG_HOME="$tmp/their-conf" HOME="$tmp/their-conf" "$ks" run "$tmp/git-env.json" --dry-run --out "$tmp/o-git-xdg"
  mkdir -p "$tmp/their-dev" && mknod "$tmp/their-dev/blk" b 7 250 && chown nobody "$tmp/their-dev"
  jq --arg d "$tmp/their-dev/blk" '.storage = {"kind": "device", "device": $d}' "$tmp/missing-device.json" >"$tmp/their-dev.json"
  expect_error "run: a device named through another user's directory" "storage.device $tmp/their-dev/blk: $tmp/their-dev belongs to uid" -- \
    "$ks" run "$tmp/their-dev.json" --out "$tmp/o-their-dev"
  if unshare --mount true 2>/dev/null; then
    cp /etc/passwd "$tmp/passwd" && cp /etc/group "$tmp/group"
    echo "ks-alice:x:4242:4242::/nonexistent:/usr/sbin/nologin" >>"$tmp/passwd"
    echo "ks-alice:x:4242:" >>"$tmp/group"
    # Theirs to write in (under sudo root writes only where the user could), on a way they may take.
    mkdir -p "$tmp/alice/sub" && chown 4242:4242 "$tmp/alice" "$tmp/alice/sub" && chmod 775 "$tmp/alice" && chmod 755 "$tmp"
    in_fake_accounts() { unshare --mount bash -c 'mount --bind "$1" /etc/passwd && mount --bind "$2" /etc/group && shift 2 && exec "$@"' _ "$tmp/passwd" "$tmp/group" "$@"; }
    if in_fake_accounts env SUDO_UID=4242 SUDO_GID=4242 "$ks" junit "$bundle" --out "$tmp/alice/sub/x.xml" >/dev/null 2>&1; then
      echo "ok   junit --out in the sudo user's private group's directory"
    else
      echo "FAIL junit --out in the sudo user's own private group's directory was refused"; failures=$((failures + 1))
    fi
    echo "ks-bob:x:4243:4242::/nonexistent:/usr/sbin/nologin" >>"$tmp/passwd"
    expect_error "junit --out where another account has the group as its primary one" "$tmp/alice belongs to uid 4242 and others may write" -- \
      in_fake_accounts env SUDO_UID=4242 SUDO_GID=4242 "$ks" junit "$bundle" --out "$tmp/alice/sub/y.xml"
    chmod 700 "$tmp"
  else
    echo "SKIPPED (part): no mount namespace for a private passwd"
  fi
  mkdir -p "$tmp/their-tmp" && chown nobody "$tmp/their-tmp"
  TMPDIR="$tmp/their-tmp" "$ks" validate "$bundle" >/dev/null 2>&1
  if [ -n "$(find "$tmp/their-tmp" -mindepth 1)" ]; then echo "FAIL: root made its temporary directory in \$TMPDIR of another user's"; failures=$((failures + 1)); fi
  for o in o-linklink o-git-theirs o-fio-theirs o-acl o-cacl o-git-config o-their-dev o-git-above o-git-env o-git-include o-git-commondir o-git-xdg; do
    if [ -e "$tmp/$o" ]; then echo "FAIL: a refused command made $tmp/$o"; failures=$((failures + 1)); fi
  done
  if [ -e "$tmp/sub-mine" ] || [ -e "$tmp/sub-theirs" ] || [ -e "$tmp/bis-mine" ] || [ -e "$tmp/o-lnk" ]; then
    echo "FAIL: a refused submit or bisect made its directory"; failures=$((failures + 1))
  fi
else
  echo "SKIPPED (part): the foreign-owner cases need root (chown)"
fi
printf '{"name": "t\\u001b]0;pwned\\u0007\\u001b[2J", "arms": {"control": {}, "patched": {}}, "workloads": [{"name": "clone"}]}' >"$tmp/esc-name.json"
out=$("$ks" run "$tmp/esc-name.json" --dry-run 2>&1)
if [ $? -ne 2 ] || grep -q $'\x1b' <<<"$out"; then
  echo "FAIL escape characters from an experiment reached the terminal: $(cat -v <<<"$out")"; failures=$((failures + 1))
else
  echo "ok   escape characters in an error message: $(head -n1 <<<"$out" | cut -c1-100)"
fi

# Fourth attack: a link inside an output directory of one's own, unquoted printed commands,
# an empty directory that meant "every run", header values that cannot be header values.
mkdir -p "$tmp/s4" "$tmp/s4-sink"
ln -s "$tmp/s4-sink" "$tmp/s4/patches"
expect_error "series --out: a link where its patches/ goes" "is not a directory of its own" -- \
  "$ks" series "$KS_SOURCE_DIR/configs/experiments/default.json" --mbox "$KS_SOURCE_DIR/kernel-patches/btrfs-noop-comment.patch" --out "$tmp/s4"
if [ -n "$(ls -A "$tmp/s4-sink")" ]; then echo "FAIL: series wrote through a link in its --out"; failures=$((failures + 1)); fi
odd="$tmp/out \$(touch $tmp/PWNED);x"
out=$("$ks" series "$KS_SOURCE_DIR/configs/experiments/default.json" --mbox "$KS_SOURCE_DIR/kernel-patches/btrfs-noop-comment.patch" --out "$odd" 2>&1)
line=$(grep -m1 "^  ksandwich run " <<<"$out")
(cd "$tmp" && eval "true ${line#*ksandwich run }")  # the printed words, as a shell reads them pasted
if [ -e "$tmp/PWNED" ] || [ -z "$line" ]; then
  echo "FAIL series printed a command that runs what its path holds: $line"; failures=$((failures + 1))
else
  echo "ok   series: the printed commands quote their paths"
fi
expect_error "cleanup \"\"" "is empty" -- "$ks" cleanup ""
expect_error "run --resume \"\"" "is empty" -- "$ks" run --resume ""
# A run directory of one's own whose bundle has a field of another type: exit 2, not 70.
mkdir "$tmp/odd-run" && jq '.experiment_file = 5' "$KS_SOURCE_DIR/tests/data/bundles/host-screen.json" >"$tmp/odd-run/bundle.json"
expect_error "run --resume: experiment_file is a number" "experiment_file is not a path" -- "$ks" run --resume "$tmp/odd-run" --dry-run
expect_error "report --tested-by with a line break" "not a mail address" -- \
  "$ks" report "$bundle" --format eml --tested-by "$(printf 'Eve <e@x>\nBcc: x@y')"
expect_error "report --in-reply-to with a space" "not a Message-ID" -- "$ks" report "$bundle" --format eml --in-reply-to "a b@x"
# Seventy-first attack: an --out that is a link was checked by its target and replaced itself
# (--out /dev/stdout made the system's link a regular file).
for cmd in junit analyze; do
  ln -sfn "$tmp/link-target.out" "$tmp/link.out"
  expect_error "$cmd --out a symbolic link" "is a symbolic link, and ksandwich replaces the file it names" -- \
    "$ks" $cmd "$bundle" --out "$tmp/link.out"
  [ -L "$tmp/link.out" ] && [ ! -e "$tmp/link-target.out" ] || { echo "FAIL $cmd --out replaced a link"; failures=$((failures + 1)); }
done
# ... and a bundle's path, or an argument CLI11 did not expect, reached the terminal raw.
esc_dir="$tmp/r"$'\e]2;PWNED\a\r'
mkdir -p "$esc_dir" && cp "$bundle" "$esc_dir/bundle.json"
for args in "analyze" "validate $bundle"; do
  # shellcheck disable=SC2086
  if "$ks" $args "$esc_dir/bundle.json" 2>&1 | grep -q $'[\e\r]'; then
    echo "FAIL $args printed the control characters of a path"; failures=$((failures + 1))
  else echo "ok   $args prints a path's control characters as spaces"; fi
done

# The bare-metal boot unit carries what the resumed run must find as the run found it: the
# kernel cache, ccache, and who the sudo user was (systemd passes no environment of its own).
mkdir "$tmp/bm-units"
# A relative one is made absolute: systemd starts the unit in / (fifty-eighth attack).
if (cd "$tmp" && KSANDWICH_BAREMETAL_STATE="$tmp/bm-state" KSANDWICH_CACHE="$tmp/bm-cache" CCACHE_DIR="bm-ccache" \
  SUDO_UID=4242 SUDO_GID=4243 "$ks" baremetal install --unit-dir "$tmp/bm-units" >/dev/null 2>&1) &&
  grep -qx "Environment=KSANDWICH_BAREMETAL_STATE=$tmp/bm-state KSANDWICH_CACHE=$tmp/bm-cache CCACHE_DIR=$tmp/bm-ccache SUDO_UID=4242 SUDO_GID=4243" \
    "$tmp/bm-units/ksandwich-resume.service"; then
  echo "ok   baremetal install: the unit carries the cache and the sudo user"
else
  echo "FAIL baremetal install: the unit lacks the cache or the sudo user:"; cat "$tmp/bm-units/"*.service
  failures=$((failures + 1))
fi
expect_error "baremetal install: a quote in \$KSANDWICH_CACHE" "holds a space, a quote, a \$, a control character or a %" -- \
  env KSANDWICH_BAREMETAL_STATE="$tmp/bm-state" KSANDWICH_CACHE="$tmp/a'b" "$ks" baremetal install --unit-dir "$tmp/bm-units"
expect_error "baremetal install: a % in \$CCACHE_DIR, which systemd would expand" "holds a space, a quote, a \$, a control character or a %" -- \
  env KSANDWICH_BAREMETAL_STATE="$tmp/bm-state" CCACHE_DIR="$tmp/c%h" "$ks" baremetal install --unit-dir "$tmp/bm-units"
# Sixty-eighth: systemd ends a line at a lone CR as well.
expect_error "baremetal install: a CR in \$KSANDWICH_CACHE, a line of the unit" "holds a space, a quote, a \$, a control character or a %" -- \
  env KSANDWICH_BAREMETAL_STATE="$tmp/bm-state" KSANDWICH_CACHE="$tmp/c"$'\r'"ExecStartPre=/x" "$ks" baremetal install --unit-dir "$tmp/bm-units"
# Seventy-first: a SUDO_UID no other command takes went into the unit, refused at boot.
expect_error "baremetal install: SUDO_UID=abc" "SUDO_UID" -- \
  env KSANDWICH_BAREMETAL_STATE="$tmp/bm-state" SUDO_UID=abc SUDO_GID=4242 "$ks" baremetal install --unit-dir "$tmp/bm-units"
if [ "$(id -u)" -eq 0 ]; then
  # ... and under sudo, status printed a registration in a root-only directory.
  mkdir -p "$tmp/bm-priv/st" && chmod 700 "$tmp/bm-priv" && echo /root/TOPSECRET-71 >"$tmp/bm-priv/st/pending"
  out=$(env KSANDWICH_BAREMETAL_STATE="$tmp/bm-priv/st" SUDO_UID=4242 SUDO_GID=4242 "$ks" baremetal status --unit-dir "$tmp/bm-priv" 2>&1)
  if grep -q -e TOPSECRET -e "installed," <<<"$out"; then
    echo "FAIL baremetal status under sudo shows what lies in a root-only directory: $out"; failures=$((failures + 1))
  else
    echo "ok   baremetal status under sudo looks as the user: $(head -c 200 <<<"$out")"
  fi
else
  echo "SKIPPED (part): baremetal status under sudo needs root (a root-only directory to look into)"
fi
# Seventieth: ExecStart= is ksandwich's own path: systemd splits it at a space (under a sticky
# directory another user could make "ks" first) and expands % and $.
for place in "ks build" "ks%n" 'ks$HOME'; do
  mkdir -p "$tmp/$place" && cp "$ks" "$tmp/$place/ksandwich"
  expect_error "baremetal install: ksandwich in \"$place/\", which systemd would split or expand" \
    "holds a space, a quote, a \$, a control character or a %" -- \
    env KSANDWICH_BAREMETAL_STATE="$tmp/bm-state" "$tmp/$place/ksandwich" baremetal install --unit-dir "$tmp/bm-units"
done

expect_error "agent: missing directory" "does not exist" -- "$agent" clone --dir "$tmp/no-such-dir"
expect_error "agent: zero ops" "ops" -- "$agent" clone --dir "$tmp" --ops 0
expect_error "agent: unknown workload" "workload" -- "$agent" clonez --dir "$tmp"

# A default run directory too long to name (after a long experiment file) is refused before
# results/ is made (forty-first attack: series and bisect, which check it as run does, left it
# behind).
long="$tmp/long-cwd/$(printf 'L%.0s' $(seq 240)).json"
mkdir "$tmp/long-cwd" && cp "$KS_SOURCE_DIR/configs/experiments/default.json" "$long"
expect_error "a default run directory too long to name" "more than a file system allows" -- \
  env -C "$tmp/long-cwd" "$ks" run "$long" --dry-run
if [ -e "$tmp/long-cwd/results" ]; then echo "FAIL: a refused run left results/ behind"; failures=$((failures + 1)); fi

# Nothing was touched: no output directories were created by refused runs.
for o in o1 o2 o3 o4 o5 o6 o7 o8 o9 o10 o11 o12; do
  if [ -e "$tmp/$o" ]; then echo "FAIL: refused run left $tmp/$o behind"; failures=$((failures + 1)); fi
done
exit $((failures > 0))

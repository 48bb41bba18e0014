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
json.dump(dict(qemu, storage={"kind": "zram"}), open(f"{d}/qemu-zram.json", "w"))
json.dump(dict(qemu, storage={"kind": "brd", "size_mib": 4096}), open(f"{d}/qemu-brd-too-big.json", "w"))
PY

expect_error "malformed JSON" "is not valid JSON" -- "$ks" run "$tmp/malformed.json" --out "$tmp/o1"
expect_error "unknown workload" "/workloads/0/name" -- "$ks" run "$tmp/unknown-workload.json" --out "$tmp/o2"
expect_error "zero ops" "/workloads/0/ops" -- "$ks" run "$tmp/zero-ops.json" --out "$tmp/o3"
expect_error "missing experiment" "does not exist" -- "$ks" run "$tmp/nope.json" --out "$tmp/o4"
expect_error "no fio installed" "fio is not installed" -- env PATH=/nonexistent "$ks" run "$tmp/fio.json" --out "$tmp/o5"
expect_error "unknown subcommand" "" -- "$ks" frobnicate
expect_error "report of a missing bundle" "does not exist" -- "$ks" report "$tmp/none.json"
expect_error "validate of a non-bundle" "problem" -- "$ks" validate "$tmp/malformed.json"
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
  expect_error "qemu: a patch file that does not exist" "patch file not found: no-such.patch" -- "$ks" run "$tmp/qemu-missing-patch.json" --out "$tmp/o9"
  expect_error "qemu: a config fragment that does not exist" "config fragment not found" -- "$ks" run "$tmp/qemu-missing-fragment.json" --out "$tmp/o10"
  expect_error "qemu: a storage kind the guest cannot have" "not available in the qemu guest" -- "$ks" run "$tmp/qemu-zram.json" --out "$tmp/o11"
  expect_error "qemu: a brd larger than the guest" "does not fit in a guest" -- "$ks" run "$tmp/qemu-brd-too-big.json" --out "$tmp/o12"
else
  echo "SKIPPED (part): the qemu cases need qemu-system-x86_64, busybox-static and btrfs-progs"
fi
expect_error "agent: missing directory" "does not exist" -- "$agent" clone --dir "$tmp/no-such-dir"
expect_error "agent: zero ops" "ops" -- "$agent" clone --dir "$tmp" --ops 0
expect_error "agent: unknown workload" "workload" -- "$agent" clonez --dir "$tmp"

# Nothing was touched: no output directories were created by refused runs.
for o in o1 o2 o3 o4 o5 o6 o7 o8 o9 o10 o11 o12; do
  if [ -e "$tmp/$o" ]; then echo "FAIL: refused run left $tmp/$o behind"; failures=$((failures + 1)); fi
done
exit $((failures > 0))

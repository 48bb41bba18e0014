#!/usr/bin/env bash
# Every shipped experiment dry-runs from the repository root: exit 0, or, where its kernel is a
# git tree this machine does not have (the nightly's, seed 000's), exit 2 naming that tree. The
# seed threads' experiments carry the thread's claim, and the one that cannot run on the
# Debian sources says in its description how to get a tree that can.
set -u
ks="$KS_BINARY_DIR/bin/ksandwich"
command -v jq >/dev/null || { echo "SKIPPED: jq is not installed (tools/setup.sh --tests)"; exit 77; }
/usr/bin/python3 -c 'import jsonschema' 2>/dev/null ||
  { echo "SKIPPED: python3-jsonschema is not installed (validate needs it; tools/setup.sh installs it)"; exit 77; }
[ -e /usr/src/linux-source-6.1.tar.xz ] ||
  { echo "SKIPPED: needs /usr/src/linux-source-6.1.tar.xz (apt-get install linux-source-6.1)"; exit 77; }
cd "$KS_SOURCE_DIR"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }

for f in configs/experiments/*.json; do
  "$ks" run "$f" --dry-run >"$tmp/out" 2>"$tmp/err"
  code=$?
  tree=$(jq -r 'select(.source.kind == "git") | .source.path' "$f")
  if [ -n "$tree" ] && [ ! -e "$tree" ]; then
    if [ "$code" -eq 2 ] && grep -q "git tree $tree does not exist" "$tmp/err"; then
      ok "$f: exit 2, its git tree $tree is not on this machine"
    else
      fail "$f: exit $code without naming the missing git tree $tree: $(head -c 300 "$tmp/err")"
    fi
  elif [ "$code" -eq 0 ]; then
    ok "$f: dry run exit 0"
  else
    fail "$f: dry run exit $code: $(head -c 300 "$tmp/err")"
  fi
done

# A shipped experiment by name, from any directory; a name that is none says which there are.
(cd "$tmp" && "$ks" run sb-nosec-dio --dry-run >"$tmp/out" 2>"$tmp/err")
code=$?
[ "$code" -eq 0 ] && grep -q "sb-nosec-dio" "$tmp/out" && ok "run sb-nosec-dio --dry-run from elsewhere: the shipped one" ||
  fail "run sb-nosec-dio --dry-run: exit $code: $(head -c 300 "$tmp/err")"
(cd "$tmp" && "$ks" run sb-nosec --dry-run >"$tmp/out" 2>"$tmp/err")
code=$?
[ "$code" -eq 2 ] && grep -q "no shipped experiment of that name" "$tmp/err" && grep -q "sb-nosec-dio, sync-data-csum" "$tmp/err" &&
  ok "run sb-nosec: exit 2, the shipped names listed" || fail "run sb-nosec: exit $code: $(head -c 300 "$tmp/err")"

# Your patch on a shipped experiment's kernel and workloads: the plan names it, not the shipped
# one; a relative path is taken from where you run; a missing file is exit 2; not with --resume.
noop=$KS_SOURCE_DIR/kernel-patches/btrfs-noop-comment.patch
(cd "$KS_SOURCE_DIR/kernel-patches" && "$ks" run default --patch btrfs-noop-comment.patch --dry-run >"$tmp/out" 2>"$tmp/err")
code=$?
if [ "$code" -eq 0 ] && grep -q "^  patched: .* + $noop\( ([^)]*)\)\?$" "$tmp/out" && ! grep -q "btrfs-drop-sb-nosec" "$tmp/out"; then
  ok "run default --patch FILE: the patched arm is that patch"
else
  fail "run default --patch FILE: exit $code, plan: $(grep -m2 'patched:' "$tmp/out") $(head -c 300 "$tmp/err")"
fi
(cd "$tmp" && "$ks" run default --patch no-such.patch --dry-run >"$tmp/out" 2>"$tmp/err")
code=$?
[ "$code" -eq 2 ] && grep -q "no-such.patch is not a file" "$tmp/err" && ok "run --patch of a missing file: exit 2" ||
  fail "run --patch no-such.patch: exit $code: $(head -c 300 "$tmp/err")"
"$ks" run --resume "$tmp" --patch "$noop" >"$tmp/out" 2>"$tmp/err"
code=$?
[ "$code" -eq 2 ] && grep -qi "excludes" "$tmp/err" && ok "run --resume with --patch: exit 2" ||
  fail "run --resume with --patch: exit $code: $(head -c 300 "$tmp/err")"

# Your tree: --source DIR builds both arms from a git tree (at HEAD, resolved to its id),
# --commit REV compares REV with its parent; nothing is written to the kernel cache.
git init -q "$tmp/tree"
printf 'VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 0\nEXTRAVERSION =\n' >"$tmp/tree/Makefile"
printf 'int a;\nint b;\n' >"$tmp/tree/f.c"
git -C "$tmp/tree" add Makefile f.c
git -C "$tmp/tree" -c user.name=t -c user.email=t@t commit -q -m base
base=$(git -C "$tmp/tree" rev-parse HEAD)
sed -i 's/int b/int c/' "$tmp/tree/f.c"
git -C "$tmp/tree" -c user.name=t -c user.email=t@t commit -q -a -m change
tip=$(git -C "$tmp/tree" rev-parse HEAD)
printf -- '--- a/f.c\n+++ b/f.c\n@@ -1,2 +1,2 @@\n int a;\n-int c;\n+int d;\n' >"$tmp/mine.patch"
mkdir -p "$tmp/cache"
(cd "$tmp" && KSANDWICH_CACHE="$tmp/cache" "$ks" run default --source tree --commit HEAD --dry-run >"$tmp/out" 2>"$tmp/err")
code=$?
if [ "$code" -eq 0 ] && grep -q "^  control: git $tmp/tree at $base (6.1.0)\$" "$tmp/out" &&
  grep -q "^  patched: git $tmp/tree at $base, then its diff to $tip (6.1.0)\$" "$tmp/out" &&
  [ "$(grep -cE '^      to build(;|$)' "$tmp/out")" -eq 2 ] && [ -z "$(ls -A "$tmp/cache")" ]; then
  ok "run default --source TREE --commit HEAD: control its parent, patched HEAD, nothing cached"
else
  fail "run --source --commit: exit $code: $(grep -A1 -E 'control:|patched:' "$tmp/out") $(head -c 300 "$tmp/err") cache: $(ls -A "$tmp/cache")"
fi
(cd "$tmp" && KSANDWICH_CACHE="$tmp/cache" "$ks" run default --source tree --patch mine.patch --dry-run >"$tmp/out" 2>"$tmp/err")
code=$?
if [ "$code" -eq 0 ] && grep -q "^  control: git $tmp/tree at $tip (6.1.0)\$" "$tmp/out" &&
  grep -q "^  patched: git $tmp/tree at $tip, + $tmp/mine.patch (6.1.0)\$" "$tmp/out" &&
  grep -q "to build: its patch applies" "$tmp/out"; then
  ok "run default --source TREE --patch FILE: both arms at HEAD, the patch on the patched arm"
else
  fail "run --source --patch: exit $code: $(grep -E 'control:|patched:' "$tmp/out") $(head -c 300 "$tmp/err")"
fi
# What a host arm writes on this machine is in its dry run (issue 27, third attack: it was not),
# and a knob that takes a CPU away is refused.
jq '.arms.patched.sysfs = {"/proc/sys/vm/dirty_ratio": "10"} | .arms.patched.mount_options = ["noatime"]' \
  configs/experiments/host-clone.json >"$tmp/knob.json"
"$ks" run "$tmp/knob.json" --dry-run --out "$tmp/knob-out" >"$tmp/out" 2>"$tmp/err"
code=$?
if [ "$code" -eq 0 ] && [ "$(grep -c "^# knob /proc/sys/vm/dirty_ratio = 10 (put back after)$" "$tmp/out")" -eq 1 ] &&
  [ "$(grep -c "mount options: noatime" "$tmp/out")" -eq 1 ]; then
  ok "run --dry-run of a host arm with a knob: the knob and mount option are in its plan"
else
  fail "host arm knob dry run: exit $code: $(grep -A3 "patched arm" "$tmp/out") $(head -c 300 "$tmp/err")"
fi
jq '.arms.patched.sysfs = {"/sys/devices/system/cpu/cpu1/online": "0"}' configs/experiments/host-clone.json >"$tmp/knob.json"
"$ks" run "$tmp/knob.json" --dry-run --out "$tmp/knob-out" >"$tmp/out" 2>"$tmp/err"
code=$?
[ "$code" -eq 2 ] && grep -q "not a knob an experiment may set" "$tmp/err" && ok "a CPU's online knob: exit 2" ||
  fail "cpu1/online knob: exit $code: $(head -c 300 "$tmp/err")"

# A saved thread with two versions of the patch: --message-id picks one (here by its lore
# link) into the cache; without it the mailbox is refused, naming --message-id.
mail() {  # subject, Message-ID, extra header lines, the diff's new line
  printf 'From x Thu Jan  1 00:00:00 1970\nFrom: A <a@x>\nSubject: %s\nMessage-ID: %s\n%s\nWhy.\n---\n' "$1" "$2" "${3:+$3
}"
  printf -- '--- a/f.c\n+++ b/f.c\n@@ -1,2 +1,2 @@\n int a;\n-int c;\n+%s\n\n' "$4"
}
{ mail "[PATCH 1/1] f: d" "<v1@x>" "" "int d;"
  mail "Re: [PATCH 1/1] f: d" "<r@x>" "In-Reply-To: <v1@x>" "int z;"
  mail "[PATCH v2 1/1] f: e" "<v2@x>" "In-Reply-To: <v1@x>
References: <v1@x>" "int e;"; } >"$tmp/thread.mbox"
(cd "$tmp" && KSANDWICH_CACHE="$tmp/cache" "$ks" run default --source tree --patch thread.mbox \
  --message-id https://lore.kernel.org/linux-btrfs/v2%40x/ --dry-run >"$tmp/out" 2>"$tmp/err")
code=$?
picked=$(sed -n 's/^  patched: .*, + \(.*\.mbox\) (6\.1\.0)$/\1/p' "$tmp/out")
if [ "$code" -eq 0 ] && [ "${picked#"$tmp/cache/threads/"}" != "$picked" ] && grep -q "^Message-ID: <v2@x>" "$picked" &&
  ! grep -qE "^Message-ID: <(v1|r)@x>" "$picked" && grep -q "f: e of thread.mbox (1 patch)" "$tmp/err" &&
  grep -q "to build: its patch applies" "$tmp/out"; then
  ok "run --patch THREAD --message-id LINK: that version alone, kept in the cache, applies"
else
  fail "run --patch THREAD --message-id: exit $code: $(grep 'patched:' "$tmp/out") $(head -c 300 "$tmp/err")"
fi
(cd "$tmp" && KSANDWICH_CACHE="$tmp/cache" "$ks" run default --source tree --patch thread.mbox --dry-run >"$tmp/out" 2>"$tmp/err")
code=$?
[ "$code" -eq 2 ] && grep -q "twice (two versions" "$tmp/err" && grep -q "\-\-message-id" "$tmp/err" &&
  ok "run --patch THREAD of two versions: exit 2, naming --message-id" ||
  fail "run --patch THREAD without --message-id: exit $code: $(head -c 300 "$tmp/err")"
for bad in "--patch thread.mbox --message-id <r@x>:is a reply" "--patch thread.mbox --message-id nope@x:has the Message-ID <nope@x>" \
  "--message-id v2@x:requires --patch" "--patch thread.mbox --patch thread.mbox --message-id v2@x:2 --patch files were given"; do
  # shellcheck disable=SC2086  # the options, split
  (cd "$tmp" && KSANDWICH_CACHE="$tmp/cache" "$ks" run default --source tree ${bad%%:*} --dry-run >"$tmp/out" 2>"$tmp/err")
  code=$?
  [ "$code" -eq 2 ] && grep -q -- "${bad#*:}" "$tmp/err" && ok "run ${bad%%:*}: exit 2" ||
    fail "run ${bad%%:*}: exit $code: $(head -c 300 "$tmp/err")"
done
for bad in "--commit HEAD:needs a git source" "--source $tmp/tree --commit $base:has no parent" \
  "--source $tmp/nothing:neither a directory nor a file" "--source $tmp/cache:not a git tree" "--source $tmp/tree --commit nope:no commit named"; do
  # shellcheck disable=SC2086  # the options, split
  "$ks" run default ${bad%%:*} --dry-run >"$tmp/out" 2>"$tmp/err"
  code=$?
  [ "$code" -eq 2 ] && grep -qF "${bad#*:}" "$tmp/err" && ok "run default ${bad%%:*}: exit 2, ${bad#*:}" ||
    fail "run default ${bad%%:*}: exit $code: $(head -c 300 "$tmp/err")"
done

# One experiment per seed thread, each with the thread's claim; the figure quoted.
for pair in "sb-nosec-dio:59%" "sync-data-csum:4882" "writeback-inhibition:-27.0%"; do
  name=${pair%%:*} figure=${pair#*:}
  f=configs/experiments/$name.json
  if jq -e --arg fig "$figure" '(.claim.thread | test("seeds/00[034]")) and (.claim.figure | contains($fig))' "$f" >/dev/null; then
    ok "$name quotes its thread's figure ($figure)"
  else
    fail "$name: no claim naming its seed thread with the figure $figure"
  fi
done
jq -e '.description | contains("/usr/src/linux-btrfs") and contains("f9a48549a15a") and contains("6.12")' \
  configs/experiments/writeback-inhibition.json >/dev/null &&
  ok "writeback-inhibition says which tree it needs and why Debian's sources will not do" ||
  fail "writeback-inhibition's description does not say how to get its tree"

# The README's results table: each bundle behind it validates, and its row gives the bundle's verdict.
for b in docs/results/*.bundle.json.gz; do
  name=$(basename "$b" .bundle.json.gz)
  verdict=$(zcat "$b" | jq -r .verdict)
  if ! "$ks" validate "$b" >"$tmp/out" 2>&1; then fail "$b does not validate: $(head -c 300 "$tmp/out")"
  elif grep -F "| \`$name\` (" README.md | grep -q "$verdict"; then ok "$b validates; the README's row says $verdict"
  else fail "the README's row for $name does not say the bundle's verdict $verdict"; fi
done

echo "$failures failed"
[ "$failures" -eq 0 ]

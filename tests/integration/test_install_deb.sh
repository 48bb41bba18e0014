#!/usr/bin/env bash
# The Debian package, end to end: cpack builds ksandwich_*.deb from this build tree, apt
# installs it into a clean Debian 12 root (debootstrap --variant=minbase, in a chroot), and
# the installed tool runs there from another directory, with no source tree: --version,
# doctor, dry runs of shipped experiments, validate and report of a real bundle.
#
# Cached under $KSANDWICH_CACHE/debootstrap (default /var/cache/ksandwich): the minimal root
# as a tar and every .deb apt downloaded, so a second run needs no network.
set -uo pipefail
skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, chroot, mount)"
for program in cpack debootstrap chroot; do
  command -v "$program" >/dev/null || skip "$program is not installed (tools/setup.sh --tests)"
done
[ -f "$KS_BINARY_DIR/CPackConfig.cmake" ] || skip "$KS_BINARY_DIR has no CPackConfig.cmake"

cache=${KSANDWICH_CACHE:-/var/cache/ksandwich}/debootstrap
mirror=http://deb.debian.org/debian
bundle=$KS_SOURCE_DIR/tests/data/bundles/qemu-confirm.json  # a real main-job bundle (tests/data/README.md)
work=$(mktemp -d "${TMPDIR:-/var/tmp}/ksandwich-install.XXXXXX")
root=$work/root
cleanup() {
  if mountpoint -q "$root/proc"; then umount "$root/proc" || umount -l "$root/proc"; fi
  mountpoint -q "$root/proc" || rm -rf --one-file-system "$work"
}
trap cleanup EXIT
started=$SECONDS
step() { echo "[$((SECONDS - started)) s] $*"; }
die() { echo "FAIL: $*"; exit 1; }
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }

step "cpack -G DEB from $KS_BINARY_DIR"
(cd "$work" && cpack -G DEB --config "$KS_BINARY_DIR/CPackConfig.cmake" -B "$work/pkg") >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log"; die "cpack -G DEB failed"; }
deb=$(ls "$work"/pkg/ksandwich_*.deb) || die "cpack made no ksandwich_*.deb"
echo "Depends: $(dpkg-deb --field "$deb" Depends)"
contents=$(dpkg-deb --contents "$deb" | awk '{print $6}')
for f in bin/ksandwich bin/ksandwich-agent share/man/man1/ksandwich.1.gz share/ksandwich/configs/experiments/default.json \
  share/bash-completion/completions/ksandwich; do
  grep -qx "./usr/$f" <<<"$contents" || die "the package lacks /usr/$f"
done

mkdir -p "$cache/archives" "$root"
if [ -f "$cache/bookworm-minbase.tar" ]; then
  step "a clean Debian 12 root from the cache ($cache/bookworm-minbase.tar)"
  tar -xf "$cache/bookworm-minbase.tar" -C "$root" || die "cannot unpack $cache/bookworm-minbase.tar"
else
  step "debootstrap --variant=minbase bookworm (once; cached in $cache)"
  timeout 1200 debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 20 "$work/debootstrap.log"; skip "debootstrap from $mirror failed (no network?)"; }
  in_root apt-get update -qq || skip "apt-get update in the new root failed (no network?)"
  in_root apt-get clean
  tar -cf "$cache/bookworm-minbase.tar.tmp" -C "$root" . && mv "$cache/bookworm-minbase.tar.tmp" "$cache/bookworm-minbase.tar"
fi

step "apt-get install ./$(basename "$deb") in the root"
cp -l "$cache"/archives/*.deb "$root/var/cache/apt/archives/" 2>/dev/null ||
  cp "$cache"/archives/*.deb "$root/var/cache/apt/archives/" 2>/dev/null || true
cp "$deb" "$root/tmp/"
install_deb() {
  in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "/tmp/$(basename "$deb")" >"$work/apt.log" 2>&1
}
if ! install_deb; then
  step "install failed with the cached package lists; apt-get update and again"
  in_root apt-get update -qq && install_deb || { tail -n 30 "$work/apt.log"; die "apt-get install of the .deb failed"; }
fi
for f in "$root"/var/cache/apt/archives/*.deb; do
  [ -e "$cache/archives/$(basename "$f")" ] || cp "$f" "$cache/archives/"
done

# /proc: the installed binary finds its data through /proc/self/exe.
mount -t proc proc "$root/proc" || die "cannot mount /proc in the root"
mkdir -p "$root/home/tester"
cp "$bundle" "$root/home/tester/bundle.json"
failures=0
# expect NAME EXIT_CODES TEXT -- COMMAND...: run in the root from /home/tester.
expect() {
  local name=$1 codes=$2 text=$3
  shift 4
  local out code
  out=$(in_root sh -c 'cd /home/tester && exec "$@"' sh "$@" 2>&1)
  code=$?
  if [[ " $codes " != *" $code "* ]]; then
    echo "FAIL $name: exit $code, expected one of $codes; output:"; echo "$out" | tail -n 20
    failures=$((failures + 1))
  elif ! grep -qF -- "$text" <<<"$out"; then
    echo "FAIL $name: output lacks '$text':"; echo "$out" | tail -n 20
    failures=$((failures + 1))
  else
    echo "ok   $name: $(grep -m1 -F -- "$text" <<<"$out")"
  fi
}
step "the installed tool, from /home/tester"
[ -e "$root$KS_SOURCE_DIR" ] && die "the source tree is visible in the root"
expect version 0 "ksandwich " -- ksandwich --version
expect doctor "0 2" "mkfs.btrfs" -- ksandwich doctor
# The kernel source is a Recommends (not installed here): the main job's dry run says what
# to install, as the real run would before building; a host experiment needs no kernel.
expect "dry run without the kernel source" 2 "apt-get install linux-source-6.1" -- \
  ksandwich run /usr/share/ksandwich/configs/experiments/default.json --dry-run
expect "dry run" 0 "points" -- ksandwich run /usr/share/ksandwich/configs/experiments/host-aa.json --dry-run
expect validate 0 ": valid" -- ksandwich validate bundle.json
expect report 0 "ksandwich report: default" -- ksandwich report bundle.json
expect "man page" 0 "ksandwich-run.1.gz" -- ls /usr/share/man/man1
expect "bash completion" 0 "complete -F _ksandwich ksandwich" -- cat /usr/share/bash-completion/completions/ksandwich
step "done: $failures failure(s)"
[ "$failures" -eq 0 ]

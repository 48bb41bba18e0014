#!/bin/bash
# kernel_git_fixture.sh DIR COMMITS SLOW_FROM DELAY_US
#
# A small git history of the default kernel source for the bisect and nightly tests: the
# first commit is Debian's linux-source-6.1 tree as it unpacks; each later one adds a comment
# line to a different file of fs/btrfs (code the compiler sees does not change), and commit
# SLOW_FROM also plants udelay(DELAY_US) at the top of btrfs_remap_file_range(), kept from
# then on (the tests plant 1000 us: a clone ioctl under TCG, 40-90 us, becomes about 15x
# slower, a shift no slow stretch of the host hides, even in a step of four blocks). Authors and dates are fixed, so the commit ids are
# the same on every machine and the kernel build cache keys stay valid across reruns.
#
# Made once into DIR (under the kernel cache), unpacked beside it and renamed into place
# when complete, under a lock beside it; an existing DIR is reused as it is. Prints the commit ids, oldest first.
set -euo pipefail
dir=$1 commits=$2 slow_from=$3 delay_us=$4
tarball=${KS_KERNEL_TARBALL:-/usr/src/linux-source-6.1.tar.xz}

# Tests that run at once (ctest -j) make it once: the second waits, then finds it made.
parent=$(dirname "$dir")
mkdir -p "$parent"
exec 9>"$parent/.fixture.lock"
flock 9
if [[ ! -e $dir/.git/ks-fixture-complete ]]; then
  tmp=$(mktemp -d "$parent/.tmp-fixture-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  tar -xf "$tarball" -C "$tmp" --strip-components=1
  cd "$tmp"
  export GIT_AUTHOR_NAME="ksandwich fixture" GIT_AUTHOR_EMAIL="ksandwich@localhost.invalid"
  export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"
  export GIT_AUTHOR_DATE="2000-01-01T00:00:00Z" GIT_COMMITTER_DATE="2000-01-01T00:00:00Z"
  git init -q .
  git config gc.auto 0
  git add -f -A .
  git commit -q -m "Linux 6.1 (Debian's linux-source-6.1)"
  files=(ioctl.c super.c inode.c file.c disk-io.c ctree.c extent_io.c volumes.c send.c scrub.c)
  for ((i = 2; i <= commits; i++)); do
    file=fs/btrfs/${files[$(( (i - 2) % ${#files[@]} ))]}
    echo "/* ksandwich fixture: commit $i */" >>"$file"
    subject="btrfs: note commit $i in $(basename "$file")"
    if ((i == slow_from)); then
      sed -i 's|^#include <linux/iversion.h>$|&\n#include <linux/delay.h>|' fs/btrfs/reflink.c
      sed -i "/^loff_t btrfs_remap_file_range(/,/^\tint ret;\$/ s|^\tint ret;$|&\n\n\tudelay($delay_us);\t/* ksandwich fixture: the planted slowdown */|" \
        fs/btrfs/reflink.c
      grep -q "udelay($delay_us)" fs/btrfs/reflink.c || { echo "could not plant the delay in reflink.c" >&2; exit 1; }
      subject="btrfs: wait ${delay_us}us in btrfs_remap_file_range (planted slowdown)"
    fi
    export GIT_AUTHOR_DATE="2000-01-$(printf %02d "$i")T00:00:00Z" GIT_COMMITTER_DATE="2000-01-$(printf %02d "$i")T00:00:00Z"
    git commit -q -am "$subject"
  done
  touch .git/ks-fixture-complete
  cd /
  mv "$tmp" "$dir"
  trap - EXIT
fi
# Packed, as a kernel developer's repository is: root checks every entry of a git directory
# before git reads it, and 80,000 loose objects over the bare-metal lab's 9p share take
# minutes per check. No deltas (--window=0): packing then takes seconds, not minutes.
if ! compgen -G "$dir/.git/objects/pack/*.pack" >/dev/null; then
  git -C "$dir" repack -a -d -q --window=0
fi
git -C "$dir" log --reverse --format=%H

#!/bin/sh
# PID 1 of the QEMU "lab machine" of the bare-metal tests (test_baremetal.cpp). Its root is
# the host's, read-only over 9p, so `ksandwich` runs here as the host built it; the lab's
# own disk is the test's directory (ks.lab=, writable over 9p) and the integration kernel
# cache (ks.cache=); both are mounted at their host paths. The results device is a virtio
# disk. What a lab machine's boot does, this does: run the installed boot hook (the systemd
# unit's ExecStart, with its Environment, when its ConditionPathExists holds), else the
# test's first command; then power off, which ends QEMU.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TMPDIR=/run/tmp

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /run
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
# /tmp stays the host's (read-only): the checkout and the lab's disk may be under it.
mkdir -p "$TMPDIR"

value() {
  read -r line </proc/cmdline
  for word in $line; do
    case "$word" in "$1="*) echo "${word#*=}"; return 0 ;; esac
  done
}
lab=$(value ks.lab)
cache=$(value ks.cache)
options=trans=virtio,version=9p2000.L,msize=262144
mkdir -p "$lab" "$cache"
if ! mount -t 9p -o "$options" lab "$lab" || ! mount -t 9p -o "$options" kscache "$cache"; then
  echo "lab: cannot mount the lab's disks"
  poweroff -f
fi
echo "lab: up, kernel $(uname -r), $(cut -d' ' -f1 /proc/uptime) s after boot"

unit="$lab/units/multi-user.target.wants/ksandwich-resume.service"
field() { sed -n "s/^$1=//p" "$unit"; }
if [ -f "$unit" ] && [ -e "$(field ConditionPathExists)" ]; then
  echo "lab: boot hook: $(field ExecStart)"
  # shellcheck disable=SC2046  # the unit's words, as systemd splits them
  env $(field Environment) $(field ExecStart)
  echo "lab: boot hook exited $?"
elif [ ! -e "$lab/started" ]; then
  touch "$lab/started"
  sh "$lab/start.sh"
  echo "lab: start.sh exited $?"
fi
echo "lab: nothing waits; powering off"
sync
poweroff -f

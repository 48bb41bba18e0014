#!/bin/sh
# ksandwich guest init: PID 1 of the hermetic initramfs the harness builds for a point of
# the qemu backend, or of the baremetal backend (a test kernel the lab machine kexec'd into).
#
# Reads back what the kernel runs with, makes a fresh btrfs, runs the agent once per
# workload of the plan (/ksandwich/plan.sh, written by the harness) and sends every JSON
# line back. Under QEMU (KS_RESULTS=port) they stream to the virtio-serial port named
# "ksandwich.results"; the console is only a log. On bare metal (KS_RESULTS=slot) the
# software watchdog is armed first (softdog.soft_margin on the command line: a hang reboots
# the machine into the lab kernel), the lines collect in /tmp and, at the end, go to the
# results device whose first block the lab wrote: "KSANDWICH-RESULTS 1 <slot> armed 0",
# <slot> being ksandwich.slot= on the command line. Init marks it "running 0" once the
# watchdog is armed and "done <bytes>" after the lines (from byte 4096) are on the device,
# then returns to the lab kernel: kexec (KS_RETURN=kexec, /ksandwich/lab/) or a reboot.
#
# Records on the port, one JSON object a line:
#   {"type":"guest",...}          what the kernel runs with (release, cmdline, clocksource...)
#   {"type":"storage",...}        the fresh filesystem as the guest sees it
#   {"type":"workload","id":...}  the agent's lines for workload ID follow
#   {"type":"workload_exit",...}  the agent's exit status
#   {"type":"text","file":F,"text":L}  line L of file F: tracefs texts of the direct-hit
#                                 or profiling pass (counted by the harness; the profiling
#                                 pass's as "profile:<workload>:<file>"), and dmesg before
#                                 the exit
#   {"type":"trace","method":...} how the direct hits were counted (or why they could not)
#   {"type":"profile","id":...}   a workload's profiling pass: the agent's exit status
#   {"type":"exit","status":N,"reason":...}  last line; then `reboot -f`
# With a minimal kernel `poweroff -f` only halts; QEMU runs with -no-reboot, so reboot exits it.
#
# shellcheck disable=SC2317  # functions called indirectly: by wait_for and by the plan

export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/ TMPDIR=/tmp

mount -t devtmpfs devtmpfs /dev
# The initramfs has no /dev/console node (it is packed without root), so the kernel could
# not give init a console: take it now that devtmpfs is there.
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
t=/sys/kernel/tracing
mount -t tmpfs tmpfs /tmp

say() { echo "ksandwich-init: $*"; }
uptime_s() { read -r up _ </proc/uptime; echo "$up"; }

# A JSON string literal: backslashes and quotes escaped, control characters dropped.
json_str() {
  printf '"%s"' "$(printf '%s' "$1" | tr -d '\000-\037' | sed 's/\\/\\\\/g; s/"/\\"/g')"
}

emit() { printf '%s\n' "$1" >&3; }

# Lines on stdin as "text" records of FILE, in one awk process (a process per line would
# take seconds under TCG).
emit_text() {
  awk -v file="$1" '{
    gsub(/\\/, "&&"); gsub(/"/, "\\\""); gsub(/[\001-\037]/, "")
    printf "{\"type\":\"text\",\"file\":\"%s\",\"text\":\"%s\"}\n", file, $0
  }' >&3
}

# The last record, then leave: reboot -f makes QEMU (-no-reboot) exit at once. Should the
# reboot fail, init exits, the kernel panics and panic=-1 with -no-reboot exits QEMU too.
finish() {
  say "exit $1: $2"
  dmesg | emit_text dmesg  # the harness scans it for WARNING, BUG, Oops, ...
  [ "$KS_RESULTS" = slot ] && emit_text console </tmp/console.log
  emit "{\"type\":\"exit\",\"status\":$1,\"reason\":$(json_str "$2"),\"uptime_s\":$(uptime_s)}"
  [ "$KS_RESULTS" = slot ] && { write_slot; return_to_lab; }
  sync
  reboot -f
  exit "$1"
}

# ---- Bare metal: the results device and the way back ---------------------------------

# The value of NAME=value on the kernel command line; the last one, as the kernel takes it.
cmdline_value() {
  read -r line </proc/cmdline
  found=
  for word in $line; do
    case "$word" in "$1="*) found=${word#*=} ;; esac
  done
  [ -n "$found" ] && echo "$found"
}

# The block device whose stable identity (wwid, else serial) is $1: a drive named by the
# lab kernel may have another name in this one.
device_with_identity() {
  for b in /sys/class/block/*; do
    for f in "$b/wwid" "$b/device/wwid" "$b/serial" "$b/device/serial"; do
      if [ -r "$f" ] && [ "$(cat "$f")" = "$1" ]; then
        echo "/dev/${b##*/}"
        return 0
      fi
    done
  done
  return 1
}

# The block device whose first line is this point's slot header.
slot_device() {
  for b in /sys/class/block/*; do
    d=/dev/${b##*/}
    [ -b "$d" ] || continue
    case "$(dd if="$d" bs=128 count=1 2>/dev/null | head -n 1 | tr -d '\000')" in
      "KSANDWICH-RESULTS 1 $KS_SLOT "*) echo "$d"; return 0 ;;
    esac
  done
  return 1
}

# The slot's first block: the header line, padded with zeros.
slot_header() {
  printf 'KSANDWICH-RESULTS 1 %s %s %s\n' "$KS_SLOT" "$1" "$2" |
    dd of="$KS_SLOT_DEVICE" bs=4096 count=1 conv=sync,notrunc,fsync 2>/dev/null
}

write_slot() {
  bytes=$(wc -c </tmp/results.jsonl)
  if dd if=/tmp/results.jsonl of="$KS_SLOT_DEVICE" bs=4096 seek=1 conv=notrunc,fsync 2>/dev/null; then
    slot_header "done" "$bytes"
  else
    say "could not write the results to $KS_SLOT_DEVICE"
  fi
}

# kexec back into the lab kernel when the plan says so (the watchdog disarmed first: its
# magic close), else, or when that fails, reboot into the machine's default boot entry.
return_to_lab() {
  if [ "$KS_RETURN" = kexec ]; then
    printf V >&4
    exec 4>&-
    initrd=
    [ -f /ksandwich/lab/initrd ] && initrd=/ksandwich/lab/initrd
    ksandwich-agent kexec /ksandwich/lab/kernel "$initrd" "$KS_LAB_CMDLINE"
    say "kexec into the lab kernel failed: rebooting"
  fi
  sync
  reboot -f
}

# Waits up to SECONDS for a test to succeed: virtio ports and NVMe namespaces appear
# asynchronously, after the driver has probed (slowly, under TCG on a busy host).
wait_for() {
  tries=$(($1 * 10))
  shift
  while ! "$@"; do
    tries=$((tries - 1))
    [ "$tries" -le 0 ] && return 1
    sleep 0.1
  done
}

results_port() {
  for p in /sys/class/virtio-ports/*; do
    if [ "$(cat "$p/name" 2>/dev/null)" = ksandwich.results ] && [ -c "/dev/${p##*/}" ]; then
      echo "/dev/${p##*/}"
      return 0
    fi
  done
  return 1
}

# shellcheck source=/dev/null  # written by the harness per run
. /ksandwich/plan.sh

watchdog=none
if [ "$KS_RESULTS" = slot ]; then
  # No serial capture on a lab machine: what init prints is sent with the results too.
  mkfifo /tmp/console.fifo
  tee /tmp/console.log </tmp/console.fifo >/dev/console &
  exec >/tmp/console.fifo 2>&1
  # From here on a hang reboots the machine: opening /dev/watchdog starts softdog's timer.
  # (A failed redirection would end the shell, and with it PID 1: test first.)
  if [ -c /dev/watchdog ]; then
    exec 4>/dev/watchdog
    watchdog="$(cat /sys/class/watchdog/watchdog0/identity 2>/dev/null || echo /dev/watchdog)"
    watchdog="$watchdog, softdog.soft_margin $(cmdline_value softdog.soft_margin) s"
  else
    say "no /dev/watchdog: a hang of this kernel would not reboot the machine"
  fi
  KS_SLOT=$(cmdline_value ksandwich.slot)
  find_slot() { KS_SLOT_DEVICE=$(slot_device); }
  if [ -z "$KS_SLOT" ] || ! wait_for 60 find_slot; then
    say "no results device holds slot '$KS_SLOT': cannot report, rebooting"
    sync
    reboot -f
    exit 1
  fi
  slot_header running 0
  exec 3>/tmp/results.jsonl
else
  port=
  find_port() { port=$(results_port); }
  if ! wait_for 30 find_port; then
    say "no virtio-serial port named ksandwich.results: cannot report, stopping"
    sync
    reboot -f
    exit 1
  fi
  exec 3>"$port"
fi

clocksource_dir=/sys/devices/system/clocksource/clocksource0
clocksource=$(cat "$clocksource_dir/current_clocksource" 2>/dev/null)
emit "{\"type\":\"guest\"\
,\"kernel_release\":$(json_str "$(uname -r)")\
,\"kernel_version\":$(json_str "$(uname -v)")\
,\"kernel_cmdline\":$(json_str "$(cat /proc/cmdline)")\
,\"preempt\":$(json_str "$(cat /sys/kernel/debug/sched/preempt 2>/dev/null)")\
,\"clocksource\":$(json_str "$clocksource")\
,\"available_clocksource\":$(json_str "$(cat "$clocksource_dir/available_clocksource" 2>/dev/null)")\
,\"cpus\":$(json_str "$(cat /sys/devices/system/cpu/online 2>/dev/null)")\
,\"mem_total\":$(json_str "$(grep MemTotal /proc/meminfo)")\
,\"watchdog\":$(json_str "$watchdog")\
,\"uptime_s\":$(uptime_s)}"

# A 1 ms tick is no clock for a microsecond operation (environment.md, traps).
case "$clocksource" in
  jiffies | refined-jiffies | "")
    finish 3 "clocksource '$clocksource' cannot time the workloads" ;;
esac

# Bare metal, a named drive: found by its identity, never by the lab kernel's name for it.
if [ -n "$KS_DEVICE_IDENTITY" ]; then
  find_device() { KS_DEVICE=$(device_with_identity "$KS_DEVICE_IDENTITY"); }
  wait_for 30 find_device || finish 4 "no drive with the identity $KS_DEVICE_IDENTITY: not formatting anything"
fi
device_ready() { [ -b "$KS_DEVICE" ]; }
wait_for 30 device_ready || finish 4 "device $KS_DEVICE did not appear"

mkfs_log=/tmp/mkfs.log
if ! ks_mkfs >"$mkfs_log" 2>&1; then
  cat "$mkfs_log"
  finish 4 "mkfs.btrfs on $KS_DEVICE failed: $(tail -n 3 "$mkfs_log" | tr '\n' ' ')"
fi
cat "$mkfs_log"
mkdir -p /mnt
if [ -n "$KS_MOUNT_OPTIONS" ]; then
  mount -t btrfs -o "$KS_MOUNT_OPTIONS" "$KS_DEVICE" /mnt || finish 4 "mount -o $KS_MOUNT_OPTIONS $KS_DEVICE failed"
else
  mount -t btrfs "$KS_DEVICE" /mnt || finish 4 "mount $KS_DEVICE failed"
fi
sectors=$(cat "/sys/class/block/${KS_DEVICE##*/}/size")
emit "{\"type\":\"storage\"\
,\"device\":$(json_str "$KS_DEVICE")\
,\"size_bytes\":$((sectors * 512))\
,\"kernel_mount_options\":$(json_str "$(awk '$2 == "/mnt" { print $4 }' /proc/mounts)")\
,\"mkfs_version\":$(json_str "$(mkfs.btrfs --version 2>&1 | head -n 1)")\
,\"mount_point\":\"/mnt\"\
,\"uptime_s\":$(uptime_s)}"

# Called by ks_workloads (the plan) once per workload: ID, then the agent's argv.
run_workload() {
  id=$1
  shift
  mkdir -p "/mnt/$id"
  emit "{\"type\":\"workload\",\"id\":$(json_str "$id"),\"uptime_s\":$(uptime_s)}"
  "$@" >&3
  status=$?
  emit "{\"type\":\"workload_exit\",\"id\":$(json_str "$id"),\"status\":$status,\"uptime_s\":$(uptime_s)}"
  [ "$status" -eq 0 ] || finish "$status" "workload $id: ksandwich-agent exited $status"
}

# Called by ks_direct_hit_pass (the plan): the same agent, output not kept.
run_pass() {
  mkdir -p "/mnt/$1"
  shift
  "$@" >/dev/null || say "direct-hit pass: ksandwich-agent exited $?"
}

# tracefs's function list, read once: each read looks every function up in kallsyms, and
# so does each name or glob written to set_ftrace_filter (0.04 s apiece under TCG), while
# an index into the list (a line number) is found without. Lines "N:name [module]" of the
# functions whose names the extended regular expression $1 matches, to stdout; `grep -F`
# first with the words $2 (every match holds one): it is fast, and the regular expression
# over the whole list costs 0.15 s. (Every boot searches: a kernel's list is fixed at its
# build, but the 40 KB of an earlier boot's result in the initramfs moved the measured
# rounds of a 200-op clone by 0.4%. What a guest holds before its rounds must not depend
# on what a cache held.)
numbered_functions() {
  [ -n "$2" ] || return 0
  [ -s /tmp/available_filter_functions ] || cat "$t/available_filter_functions" >/tmp/available_filter_functions
  # shellcheck disable=SC2086  # $2: grep's "-e WORD" options
  grep -n -F $2 /tmp/available_filter_functions | grep -E "^[0-9]+:($1)( |\$)"
}

# The plan's direct-hit functions (and their compiler clones, name.isra.0 ...) as listed
# in available_filter_functions: numbered to /tmp/available, sent as read. Looked up in $1,
# a numbered list already found that holds them all (the profiling pass's), when given:
# a second search of the whole list costs a TCG guest about 0.05 s.
direct_hit_symbols() {
  if [ -z "$1" ]; then
    numbered_functions "$KS_TRACE_REGEX" "$KS_TRACE_WORDS" >/tmp/available
  elif [ -n "$KS_TRACE_REGEX" ]; then
    grep -E "^[0-9]+:($KS_TRACE_REGEX)( |\$)" "$1" >/tmp/available
  else
    : >/tmp/available
  fi
  cut -d: -f2- /tmp/available | emit_text available_filter_functions
}

# set_ftrace_filter := the numbered functions on stdin, by index. Reads back what it took,
# which must be the lines asked for, and sends it. False, with the reason in $why, when it
# took nothing. (An empty filter, which reads as a "#### all functions enabled ####"
# comment, would profile every function.)
set_filter() {
  why=
  sort -u >/tmp/filter-asked
  cut -d: -f1 /tmp/filter-asked >"$t/set_ftrace_filter"
  grep -v '^#' "$t/set_ftrace_filter" | sort >/tmp/filter
  if ! cut -d: -f2- /tmp/filter-asked | sort | cmp -s - /tmp/filter; then
    why="set_ftrace_filter, written by index, took other functions than asked"
    : >"$t/set_ftrace_filter"
    : >/tmp/filter
  fi
  emit_text set_ftrace_filter </tmp/filter
  [ -s /tmp/filter ] || why=${why:-no function matched}
  [ -z "$why" ]
}

# After the timed rounds, never during them: the function profiler counts calls to the
# plan's functions during a short pass. The tracefs texts go to the port as read; the
# harness counts them as it does on the host. (With a profiling pass, that pass counts
# them instead: profiles.)
direct_hits() {
  if [ ! -w "$t/function_profile_enabled" ]; then
    emit "{\"type\":\"trace\",\"method\":\"none\",\"failure\":\"this kernel has no function profiler (CONFIG_FUNCTION_PROFILER) or no tracefs\"}"
    return
  fi
  direct_hit_symbols
  if set_filter </tmp/available; then
    echo 1 >"$t/function_profile_enabled"  # enabling resets the counts
    ks_direct_hit_pass
    echo 0 >"$t/function_profile_enabled"
    for stat in "$t"/trace_stat/function[0-9]*; do
      emit_text "${stat##*/}" <"$stat"
    done
  fi
  emit "{\"type\":\"trace\",\"method\":\"function_profiler\"}"
}

# Called by ks_profile_pass (the plan), once per workload: the agent runs the workload's
# short pass and switches the profiler on (which resets its counts) for the round's timed
# operations only (--profile-switch: a switch on and off costs a TCG guest about 23 ms,
# less than profiling the round's files being made); then every CPU's counts go to the port.
profile_workload() {
  id=$1
  shift
  mkdir -p "/mnt/$id-profile"
  "$@" >/tmp/profile-agent
  status=$?
  echo 0 >"$t/function_profile_enabled"  # an agent that died mid-round left it on
  emit "{\"type\":\"profile\",\"id\":$(json_str "$id"),\"status\":$status}"
  emit_text "profile:$id:agent" </tmp/profile-agent
  for stat in "$t"/trace_stat/function[0-9]*; do
    [ -r "$stat" ] && emit_text "profile:$id:${stat##*/}" <"$stat"
  done
}

# After the timed rounds: calls and own time of every function whose name the plan's
# KS_PROFILE_REGEX matches, and of the direct-hit functions, one workload at a time. The
# harness counts the direct hits from it: they have no pass of their own. graph-time 0: a
# function's time leaves out the profiled functions it calls; sleep-time 0: and the time
# it slept.
profiles() {
  if [ ! -w "$t/function_profile_enabled" ]; then
    why="this kernel has no function profiler (CONFIG_FUNCTION_PROFILER) or no tracefs"
  else
    numbered_functions "$KS_PROFILE_REGEX" "$KS_PROFILE_WORDS" >/tmp/profiled
    direct_hit_symbols /tmp/profiled
    set_filter </tmp/profiled  # not in a pipeline: it sets $why
  fi
  if [ -n "$why" ]; then
    say "profiling pass: $why"
    [ -n "$KS_TRACE_FUNCTIONS" ] && emit "{\"type\":\"trace\",\"method\":\"none\",\"failure\":$(json_str "profiling pass: $why")}"
    return
  fi
  [ -n "$KS_TRACE_FUNCTIONS" ] && emit "{\"type\":\"trace\",\"method\":\"function_profiler\"}"
  for option in graph-time sleep-time; do
    if [ -w "$t/options/$option" ]; then
      echo 0 >"$t/options/$option"
    else
      say "profiling pass: no options/$option: times include what functions call or sleep"
    fi
  done
  ks_profile_pass
  : >"$t/set_ftrace_filter"
}

ks_workloads
if [ -n "$KS_PROFILE_REGEX" ]; then
  profiles
elif [ -n "$KS_TRACE_FUNCTIONS" ]; then
  direct_hits
fi
umount /mnt || finish 5 "umount /mnt failed"
finish 0 "ok"

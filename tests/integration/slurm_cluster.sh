# A single-node Slurm cluster on localhost for tests, sourced by test_slurm_*.sh.
# slurm_cluster_start DIR: munged, slurmctld and slurmd as root, every file under DIR,
# cgroup-free (proctrack/linuxproc, task/none), ports picked free; exports SLURM_CONF.
# slurm_cluster_stop: kills the daemons it started (by pid) and waits for them.
# And what the test scripts share: check, slurm_test_up, slurm_test_teardown,
# slurm_wait_machine_lock.

slurm_free_port() {
  local port
  for port in $(shuf -i 20000-60000 -n 50); do
    if ! ss -Htln "sport = :$port" | grep -q .; then echo "$port"; return; fi
  done
  return 1
}

slurm_cluster_start() {
  local dir=$1 node
  node=$(hostname -s)
  mkdir -p "$dir"/{munge,state,spool,log}
  chmod 700 "$dir/munge"
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/munge.key"
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.sock" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed" || return 1
  SLURM_CLUSTER_PIDS="$(cat "$dir/munge/munged.pid")"
  local ctld_port slurmd_port
  ctld_port=$(slurm_free_port) && slurmd_port=$(slurm_free_port) || return 1
  cat >"$dir/slurm.conf" <<CONF
ClusterName=kstest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
MinJobAge=3600
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -f "$SLURM_CONF" || return 1
  slurmd -f "$SLURM_CONF" -N "$node" || return 1
  local i
  for i in $(seq 1 60); do
    [ -s "$dir/slurmctld.pid" ] && [ -s "$dir/slurmd.pid" ] && break
    sleep 0.5
  done
  SLURM_CLUSTER_PIDS="$SLURM_CLUSTER_PIDS $(cat "$dir/slurmctld.pid" 2>/dev/null) $(cat "$dir/slurmd.pid" 2>/dev/null)"
  for i in $(seq 1 60); do
    if sinfo -h -N -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then return 0; fi
    sleep 0.5
  done
  echo "slurm node never became idle:" >&2
  sinfo -N >&2 || true
  tail -n 20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
  return 1
}

slurm_cluster_stop() {
  local pid
  for pid in ${SLURM_CLUSTER_PIDS:-}; do kill "$pid" 2>/dev/null || true; done
  for pid in ${SLURM_CLUSTER_PIDS:-}; do
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
  done
  SLURM_CLUSTER_PIDS=
}

passes=0 failures=0
check() {  # NAME COMMAND...: passes when COMMAND exits 0
  local name=$1
  shift
  if "$@"; then echo "ok   $name"; passes=$((passes + 1)); else echo "FAIL $name"; failures=$((failures + 1)); fi
}

# slurm_test_up DIR: the cluster started under DIR, or the test fails with the daemons' logs.
slurm_test_up() {
  local begun
  begun=$(date +%s)
  if ! slurm_cluster_start "$1"; then
    echo "FAIL the single-node Slurm cluster did not start"
    tail -n 30 "$1"/log/* 2>/dev/null
    exit 1
  fi
  echo "cluster up in $(($(date +%s) - begun)) s: $(sinfo -h -N -o '%N %T %c CPUs')"
}

# slurm_test_teardown KSANDWICH SUBMIT_DIR TMP: the jobs SUBMIT_DIR lists cancelled and
# their runs cleaned up (nothing left mounted or attached), the cluster stopped, TMP removed.
slurm_test_teardown() {
  local ks=$1 sub=$2 tmp=$3 jobs out
  if [ -f "$sub/submit.json" ]; then
    jobs=$(jq -r '.jobs[].job_id' "$sub/submit.json")
    # shellcheck disable=SC2086  # one argument per job id
    [ -n "$jobs" ] && scancel $jobs 2>/dev/null
    sleep 1
    for out in "$sub"/results/*/; do [ -d "$out" ] && "$ks" cleanup "$out" >/dev/null 2>&1; done
  fi
  slurm_cluster_stop
  rm -rf "$tmp"
}

# One measuring run per machine: wait until the jobs' runs can take the machine lock, all to
# themselves, or with "shared" (runs on QEMU's instruction clock) beside others like them.
slurm_wait_machine_lock() {
  local mode=-x
  [ "${1:-}" = shared ] && mode=-s
  for _ in $(seq 1 600); do
    [ -e /run/ksandwich/run.lock ] && ! flock -n "$mode" /run/ksandwich/run.lock true && { sleep 2; continue; }
    break
  done
}

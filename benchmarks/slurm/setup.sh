#!/usr/bin/env bash
# A one-node Slurm on this machine, the peer of the trivial-task throughput benchmark.
#
#   bash benchmarks/slurm/setup.sh start STATE_DIR [SLOTS]   # install if missing, start, wait
#   bash benchmarks/slurm/setup.sh stop STATE_DIR            # stop what start started
#
# Debian's slurm-wlm and munge (apt-get, only when missing). Everything else lives in STATE_DIR:
# slurm.conf, the munge socket, the daemons' state, pids and logs. The node is `localhost` with
# SLOTS CPUs (default 8) declared regardless of the real core count (config_overrides), one job
# per CPU (cons_tres, CR_CPU, OverSubscribe=FORCE:1), no cgroups (proctrack/linuxproc), no
# accounting. Use it with `export SLURM_CONF=STATE_DIR/slurm.conf`.
# Exit status 3: Slurm cannot be installed here (the benchmark prints the reason and skips it).
set -euo pipefail

action=${1:?usage: setup.sh start|stop STATE_DIR [SLOTS]}
state=$(mkdir -p "${2:?usage: setup.sh start|stop STATE_DIR [SLOTS]}" && cd "$2" && pwd)
slots=${3:-8}
ctld_port=${RESOLUTE_SLURMCTLD_PORT:-16817}
slurmd_port=${RESOLUTE_SLURMD_PORT:-16818}

stop_pidfile() {
  local file=$1 pid
  [ -s "$file" ] || return 0
  pid=$(cat "$file")
  if kill "$pid" 2>/dev/null; then
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$file"
}

# slurmstepd listens on STATE_DIR/spool/localhost_<job id>.<step id>, and a Unix socket path
# has at most 107 bytes: with job ids of up to 7 digits and the batch step's 4294967291, the
# spool path may have 78. Past that, jobs 10 and up stay PENDING for ever (requeued after
# "Unix socket path ... is too long" in slurmd.log), so a long STATE_DIR is refused up front.
spool_max=78
if [ "$action" = start ] && [ ${#state} -gt $((spool_max - 6)) ]; then
  echo "STATE_DIR is too long for Slurm (${#state} characters, at most $((spool_max - 6))):" \
    "slurmstepd's sockets under $state/spool would pass the 107-byte limit of a Unix socket" \
    "path; use a shorter directory" >&2
  exit 2
fi

if [ "$action" = stop ]; then
  # Jobs first, so that slurmd does not leave their processes behind.
  if [ -f "$state/slurm.conf" ] && command -v scancel >/dev/null; then
    SLURM_CONF=$state/slurm.conf timeout 10 scancel --full --quiet -u "$(id -un)" 2>/dev/null || true
  fi
  stop_pidfile "$state/slurmd.pid"
  stop_pidfile "$state/slurmctld.pid"
  stop_pidfile "$state/munged.pid"
  exit 0
fi
[ "$action" = start ] || { echo "unknown action $action" >&2; exit 2; }

need_install=0
for bin in sbatch squeue slurmctld slurmd munged; do
  command -v "$bin" >/dev/null || need_install=1
done
if [ "$need_install" = 1 ]; then
  sudo_cmd=()
  [ "$(id -u)" = 0 ] || sudo_cmd=(sudo -n)
  echo "installing slurm-wlm and munge with apt-get …" >&2
  if ! "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y \
      --no-install-recommends slurm-wlm munge >"$state/apt.log" 2>&1; then
    echo "cannot install slurm-wlm/munge with apt-get (see $state/apt.log):" >&2
    tail -3 "$state/apt.log" >&2
    exit 3
  fi
fi

# munge: our own socket, pid and seed under STATE_DIR, the packaged key.
key=/etc/munge/munge.key
if [ ! -s "$key" ]; then
  if command -v mungekey >/dev/null; then mungekey --create --keyfile="$key"; else
    dd if=/dev/urandom of="$key" bs=1 count=1024 status=none; fi
  chmod 400 "$key"
fi
stop_pidfile "$state/munged.pid"
munged --force --socket="$state/munge.socket" --pid-file="$state/munged.pid" \
  --key-file="$key" --log-file="$state/munged.log" --seed-file="$state/munged.seed"

user=$(id -un)
mkdir -p "$state/ctld" "$state/spool"
cat >"$state/slurm.conf" <<EOF
ClusterName=resolute-bench
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$state/munge.socket
CredType=cred/munge
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MaxJobCount=100000
MinJobAge=300
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$slots State=UNKNOWN
PartitionName=bench Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:1
EOF
export SLURM_CONF=$state/slurm.conf

stop_pidfile "$state/slurmd.pid"
stop_pidfile "$state/slurmctld.pid"
# -c: a clean start (no jobs remembered from an earlier run); -i: ignore a stale state file.
slurmctld -c -i -f "$SLURM_CONF"
slurmd -N localhost -f "$SLURM_CONF"

for _ in $(seq 1 150); do
  node_state=$(sinfo -h -N -o '%T' 2>/dev/null | head -1 || true)
  case "$node_state" in
    idle) echo "slurm is up: node localhost, $slots slots, SLURM_CONF=$SLURM_CONF" >&2; exit 0 ;;
  esac
  sleep 0.2
done
echo "slurm did not become idle (node state: ${node_state:-none}); last log lines:" >&2
tail -5 "$state/slurmctld.log" "$state/slurmd.log" >&2 || true
exit 1

#!/usr/bin/env bash
# A real one-node Slurm on this machine, for the cluster tests (tests/test_clusters.py) and for trying
# `launcher=slurm` by hand: Debian's slurm-wlm (22.05), munge, and two clusters on 127.0.0.1, each with its
# own slurmctld and slurmd, so that a sweep meets both kinds a user meets:
#
#   acct    accounting through slurmdbd and a private MariaDB (sacct works)   SLURM_CONF=$ROOT/acct/slurm.conf
#   noacct  no accounting at all (accounting_storage/none, no sacct), as on many small clusters
#                                                                           SLURM_CONF=$ROOT/noacct/slurm.conf
#
#   bash scripts/slurm_local.sh start    # idempotent: starts what is not running, waits until both are idle
#   bash scripts/slurm_local.sh stop     # ends only the daemons this script started (the pids it recorded)
#   bash scripts/slurm_local.sh status   # exit 0 when both clusters answer
#
# Needs root and the packages slurm-wlm slurmdbd munge mariadb-server (.ci/run installs them). Daemons run as
# root with proctrack/linuxproc and task/none (no cgroups needed); jobs run on this machine, so they reach
# servers on 127.0.0.1. State, logs and pid files live under $RUNNER_SLURM_ROOT (default /var/lib/runner-slurm).
set -euo pipefail
ROOT=${RUNNER_SLURM_ROOT:-/var/lib/runner-slurm}
HOST=$(hostname -s)
DB_PORT=3307
DBD_PORT=6819

say() { echo "slurm_local: $*" >&2; }
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# stop_pid FILE: end the daemon whose pid FILE holds (SIGTERM, then SIGKILL after 10 s) and remove FILE.
stop_pid() {
  local file=$1 pid
  [ -s "$file" ] || return 0
  pid=$(cat "$file")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$file"
}

munge_up() {
  if pgrep -x munged >/dev/null; then return 0; fi  # one munged serves every cluster of this machine
  mkdir -p /etc/munge /run/munge /var/log/munge /var/lib/munge
  [ -s /etc/munge/munge.key ] || dd if=/dev/urandom of=/etc/munge/munge.key bs=1k count=1 2>/dev/null
  chmod 400 /etc/munge/munge.key
  munged --force --pid-file="$ROOT/munged.pid"
  for _ in $(seq 50); do alive "$ROOT/munged.pid" && return 0; sleep 0.1; done
  say "munged did not start"; return 1
}

mariadb_up() {
  local dir=$ROOT/mysql
  alive "$ROOT/mysql.pid" && return 0
  if [ ! -d "$dir/mysql" ]; then
    mariadb-install-db --no-defaults --datadir="$dir" --user=root --auth-root-authentication-method=socket \
      --skip-test-db >"$ROOT/mysql-install.log" 2>&1 || { say "mariadb-install-db failed: $ROOT/mysql-install.log"; return 1; }
  fi
  setsid mariadbd --no-defaults --datadir="$dir" --socket="$ROOT/mysql.sock" --pid-file="$ROOT/mysql.pid" \
    --port=$DB_PORT --bind-address=127.0.0.1 --user=root --skip-log-bin --innodb-buffer-pool-size=16M \
    --log-error="$ROOT/mysql.err" </dev/null >/dev/null 2>&1 &
  for _ in $(seq 300); do
    if mariadb --no-defaults -S "$ROOT/mysql.sock" -u root -e "SELECT 1" >/dev/null 2>&1; then
      mariadb --no-defaults -S "$ROOT/mysql.sock" -u root -e "
        CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm-local';
        GRANT ALL ON runner_slurm_acct.* TO 'slurm'@'127.0.0.1';"
      return 0
    fi
    sleep 0.1
  done
  say "MariaDB did not start: $ROOT/mysql.err"; return 1
}

slurmdbd_up() {
  alive "$ROOT/slurmdbd.pid" && return 0
  cat >"$ROOT/acct/slurmdbd.conf" <<CONF  # slurmdbd reads it beside SLURM_CONF
AuthType=auth/munge
DbdHost=$HOST
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$ROOT/slurmdbd.pid
LogFile=$ROOT/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=slurm-local
StorageLoc=runner_slurm_acct
CONF
  chmod 600 "$ROOT/acct/slurmdbd.conf"
  SLURM_CONF="$ROOT/acct/slurm.conf" slurmdbd
  for _ in $(seq 300); do
    (exec 3<>/dev/tcp/127.0.0.1/$DBD_PORT) 2>/dev/null && return 0
    sleep 0.1
  done
  say "slurmdbd did not start: $ROOT/slurmdbd.log"; return 1
}

# write_conf NAME CTLD_PORT SLURMD_PORT ACCOUNTING(yes|no)
write_conf() {
  local name=$1 dir=$ROOT/$1 cpus mem
  cpus=$(nproc)
  mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
  mkdir -p "$dir/state" "$dir/spool"
  cat >"$dir/slurm.conf" <<CONF
ClusterName=runner-$name
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$2
SlurmdPort=$3
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
ReturnToService=2
KillWait=5
MinJobAge=300
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
NodeName=n-$name NodeHostname=$HOST NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=n-$name Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
  if [ "$4" = yes ]; then
    printf 'AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost=127.0.0.1\nAccountingStoragePort=%s\n' \
      "$DBD_PORT" >>"$dir/slurm.conf"
  else
    echo "AccountingStorageType=accounting_storage/none" >>"$dir/slurm.conf"
  fi
}

cluster_up() {  # cluster_up NAME CTLD_PORT SLURMD_PORT ACCOUNTING
  local name=$1 dir=$ROOT/$1
  if ! alive "$dir/slurmctld.pid" || ! alive "$dir/slurmd.pid"; then
    stop_pid "$dir/slurmd.pid"
    stop_pid "$dir/slurmctld.pid"
    write_conf "$@"
    SLURM_CONF="$dir/slurm.conf" slurmctld -f "$dir/slurm.conf" -c -i
    SLURM_CONF="$dir/slurm.conf" slurmd -f "$dir/slurm.conf" -N "n-$name"
  fi
  for _ in $(seq 300); do
    SLURM_CONF="$dir/slurm.conf" sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)' && return 0
    sleep 0.1
  done
  say "cluster $name is not up: $dir/slurmctld.log, $dir/slurmd.log"; return 1
}

start() {
  [ "$(id -u)" -eq 0 ] || { say "needs root (the daemons run as root)"; return 1; }
  for cmd in slurmctld slurmd slurmdbd munged mariadbd sacct; do
    command -v "$cmd" >/dev/null || { say "$cmd is missing: apt-get install slurm-wlm slurmdbd munge mariadb-server"; return 1; }
  done
  mkdir -p "$ROOT"
  munge_up
  mariadb_up
  write_conf acct 6817 6818 yes  # slurmdbd reads the cluster's slurm.conf too
  slurmdbd_up
  cluster_up acct 6817 6818 yes
  cluster_up noacct 6827 6828 no
  for _ in $(seq 100); do  # slurmctld registers its cluster with slurmdbd shortly after it starts
    SLURM_CONF="$ROOT/acct/slurm.conf" sacct -n -X -S now >/dev/null 2>&1 && break
    sleep 0.1
  done
  say "up: SLURM_CONF=$ROOT/acct/slurm.conf (sacct), SLURM_CONF=$ROOT/noacct/slurm.conf (no accounting)"
}

stop() {
  for name in noacct acct; do
    stop_pid "$ROOT/$name/slurmd.pid"
    stop_pid "$ROOT/$name/slurmctld.pid"
  done
  stop_pid "$ROOT/slurmdbd.pid"
  stop_pid "$ROOT/mysql.pid"
  stop_pid "$ROOT/munged.pid"  # only when this script started it
  say "stopped"
}

status() {
  local ok=0
  for name in acct noacct; do
    if SLURM_CONF="$ROOT/$name/slurm.conf" sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
      say "$name: up (SLURM_CONF=$ROOT/$name/slurm.conf)"
    else
      say "$name: down"; ok=1
    fi
  done
  return $ok
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac

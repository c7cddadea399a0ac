#!/usr/bin/env bash
# A one-node SLURM cluster on this computer, for trying `--profile workflow/profiles/slurm` and for
# the tests (tests/test_slurm.py). Needs root and the Debian packages slurm-wlm and munge
# (`./install.sh` installs them where apt-get exists).
#
#   cluster/slurm-local.sh start    write /etc/slurm/slurm.conf, start munged, slurmctld, slurmd,
#                                   wait until the node is idle (does nothing if already up)
#   cluster/slurm-local.sh status   each daemon's PID and whether it runs, then `sinfo`
#   cluster/slurm-local.sh flags    the options Snakemake needs for this cluster on top of the
#                                   profile: snakemake --profile workflow/profiles/slurm $(cluster/slurm-local.sh flags)
#   cluster/slurm-local.sh stop     cancel every job, stop each daemon by its PID, remove the
#                                   slurm.conf this script wrote
#
# Everything else lives in one scratch directory, $SPECSNAP_SLURM_DIR (default
# ${TMPDIR:-/tmp}/specsnap-slurm): a private munge key and socket, slurmctld's state, slurmd's spool,
# the PID files and the logs (log/slurmctld.log, log/slurmd.log, log/munged.log, and
# log/jobcomp.log: one line per finished job, written by SLURM's jobcomp/filetxt plugin, since this
# cluster has no accounting database and so no `sacct`).
#
# slurm.conf must be /etc/slurm/slurm.conf: Snakemake's SLURM jobstep plugin clears every SLURM_*
# variable (SLURM_CONF too) before the `srun` inside each job. A slurm.conf that this script did not
# write is never touched: `start` refuses, naming it. Every address is 127.0.0.1 (the node's
# hostname is its NodeName, reached at NodeAddr=127.0.0.1); ports are SLURM's defaults, 6817 and
# 6818, unless SPECSNAP_SLURM_PORT (slurmctld; slurmd takes the next one) says otherwise.
set -euo pipefail
PATH="$PATH:/usr/sbin:/sbin"  # the daemons live there; a user's PATH may lack it

CONF=/etc/slurm/slurm.conf
MARK="# Written by specsnap cluster/slurm-local.sh"
DIR="${SPECSNAP_SLURM_DIR:-${TMPDIR:-/tmp}/specsnap-slurm}"
PORT="${SPECSNAP_SLURM_PORT:-6817}"
NAME="$(basename "$0")"

die() { echo "$NAME: error: $*" >&2; exit 1; }
say() { echo "$NAME: $*"; }

# The PID a daemon wrote into FILE, if that process is alive.
alive_pid() {
  local file="$1" pid
  [ -s "$file" ] || return 1
  pid="$(tr -dc '0-9' <"$file")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

node_state() { sinfo -h -N -o '%t' 2>/dev/null | head -n1; }

preflight() {
  [ "$(id -u)" = 0 ] || die "must run as root (slurmctld and slurmd run as root here, and slurm.conf goes to $CONF)"
  local missing=()
  for bin in munged mungekey slurmctld slurmd sinfo sbatch squeue scancel; do
    command -v "$bin" >/dev/null 2>&1 || missing+=("$bin")
  done
  [ ${#missing[@]} = 0 ] || die "missing ${missing[*]}; install the packages slurm-wlm and munge (./install.sh does it where apt-get exists)"
  if [ -e "$CONF" ] && ! head -n1 "$CONF" | grep -qF "$MARK"; then
    die "$CONF exists and was not written by this script; it is left alone. Move it away (and stop that cluster) to use the local cluster"
  fi
  if [ -e "$CONF" ] && ! grep -qxF "# scratch: $DIR" "$CONF"; then
    local other
    other="$(sed -n 's/^# scratch: //p' "$CONF")"
    if [ -n "$other" ] && { alive_pid "$other/slurmctld.pid" >/dev/null || alive_pid "$other/slurmd.pid" >/dev/null; }; then
      die "a local cluster with scratch directory $other is running; stop it first (SPECSNAP_SLURM_DIR=$other $0 stop)"
    fi
  fi
}

write_conf() {
  local node
  # The node's CPUs, sockets, cores, threads and memory as slurmd itself detects them.
  node="$(slurmd -C 2>/dev/null | grep '^NodeName=')" || die "slurmd -C did not describe this node"
  mkdir -p /etc/slurm
  cat >"$CONF.tmp" <<EOF
$MARK; its \`stop\` removes it.
# scratch: $DIR
ClusterName=specsnap
SlurmctldHost=$(hostname)(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
StateSaveLocation=$DIR/slurmctld
SlurmdSpoolDir=$DIR/slurmd
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
ReturnToService=2
MinJobAge=300
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.log
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  mv "$CONF.tmp" "$CONF"
}

start_munge() {
  if alive_pid "$DIR/munge/munged.pid" >/dev/null; then return; fi
  install -d -m 0755 "$DIR"
  install -d -m 0755 -o munge -g munge "$DIR/munge"
  if [ ! -s "$DIR/munge/munge.key" ]; then
    runuser -u munge -- mungekey --create --keyfile="$DIR/munge/munge.key"
  fi
  runuser -u munge -- munged --socket="$DIR/munge/munge.socket" --key-file="$DIR/munge/munge.key" \
    --pid-file="$DIR/munge/munged.pid" --seed-file="$DIR/munge/munged.seed" \
    --log-file="$DIR/munge/munged.log" \
    || die "munged did not start; see $DIR/munge/munged.log"
  ln -sfn ../munge/munged.log "$DIR/log/munged.log"
}

start() {
  preflight
  if alive_pid "$DIR/slurmctld.pid" >/dev/null && alive_pid "$DIR/slurmd.pid" >/dev/null; then
    case "$(node_state)" in
      idle|mix|alloc) say "already running (scratch directory $DIR)"; return ;;
    esac
  fi
  mkdir -p "$DIR/log" "$DIR/slurmctld" "$DIR/slurmd"
  write_conf
  start_munge
  # -c: a fresh controller state (no jobs from an earlier start); -i would ignore it on error.
  alive_pid "$DIR/slurmctld.pid" >/dev/null || slurmctld -c || die "slurmctld did not start; see $DIR/log/slurmctld.log"
  alive_pid "$DIR/slurmd.pid" >/dev/null || slurmd || die "slurmd did not start; see $DIR/log/slurmd.log"
  local state=""
  for _ in $(seq 60); do
    state="$(node_state)"
    [ "$state" = idle ] && break
    sleep 0.5
  done
  [ "$state" = idle ] || die "the node is '${state:-not listed}' after 30 s, not idle; see $DIR/log/slurmctld.log and slurmd.log"
  say "running: node $(hostname) idle, partition debug (scratch directory $DIR, slurm.conf $CONF)"
}

stop_pid() {  # stop_pid NAME PIDFILE: TERM, wait up to 10 s, then KILL
  local name="$1" pid
  pid="$(alive_pid "$2")" || return 0
  kill -TERM "$pid"
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || { say "stopped $name (pid $pid)"; return 0; }; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  say "killed $name (pid $pid): it did not stop within 10 s"
}

stop() {
  [ "$(id -u)" = 0 ] || die "must run as root"
  if alive_pid "$DIR/slurmctld.pid" >/dev/null && [ -e "$CONF" ] && grep -qxF "# scratch: $DIR" "$CONF"; then
    # Jobs first, while slurmd can still end their steps: nothing of them outlives the cluster.
    if [ -n "$(squeue -h -o %i 2>/dev/null)" ]; then
      scancel --full --quiet $(squeue -h -o %i) 2>/dev/null || true
      for _ in $(seq 100); do [ -z "$(squeue -h -t R,CG,PD -o %i 2>/dev/null)" ] && break; sleep 0.1; done
    fi
  fi
  stop_pid slurmd "$DIR/slurmd.pid"
  stop_pid slurmctld "$DIR/slurmctld.pid"
  stop_pid munged "$DIR/munge/munged.pid"
  if [ -e "$CONF" ] && head -n1 "$CONF" | grep -qF "$MARK" && grep -qxF "# scratch: $DIR" "$CONF"; then
    rm -f "$CONF"
    say "removed $CONF (logs stay in $DIR/log)"
  fi
}

status() {
  local rc=0 pid
  say "scratch directory $DIR"
  for pair in munged:munge/munged.pid slurmctld:slurmctld.pid slurmd:slurmd.pid; do
    if pid="$(alive_pid "$DIR/${pair#*:}")"; then say "${pair%%:*} running (pid $pid)"
    else say "${pair%%:*} not running"; rc=3; fi
  done
  [ $rc = 0 ] && sinfo
  return $rc
}

# No accounting database here: job status from squeue (sacct cannot answer), no account to bill,
# and the first status check after 1 s instead of 40 (jobs here start at once).
FLAGS="--slurm-status-command squeue --slurm-no-account --slurm-init-seconds-before-status-checks 1"

case "${1:-}" in
  start) start; say "run: snakemake --profile workflow/profiles/slurm $FLAGS" ;;
  flags) echo "$FLAGS" ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $NAME start|stop|status|flags  (scratch directory: \$SPECSNAP_SLURM_DIR, now $DIR)" >&2; exit 2 ;;
esac

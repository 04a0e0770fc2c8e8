#!/usr/bin/env bash
# Install Slurm from Debian packages and start a one-node cluster on this machine (loopback).
#
# Meant for CI containers and for a user who wants a throw-away local Slurm to try
# `assay run RECIPE --executor slurm`. Run it as root; it is idempotent (running it again only
# restarts what is not running). Tested on Debian 12 (Slurm 22.05, munge 0.5.15) inside a
# container without systemd or cgroups, which is why the config below uses no cgroup plugin:
#   ProctrackType=proctrack/linuxproc  track job processes through /proc, not cgroups
#   TaskPlugin=task/none               no CPU binding / cgroup confinement
#   JobAcctGatherType=jobacct_gather/none, AccountingStorageType=accounting_storage/none
# On a real cluster keep your site's config; nothing in assay depends on these choices.
#
# Steps:
#   1. apt-get install slurmctld slurmd slurm-client munge
#   2. make sure the short hostname resolves (slurmctld refuses to start otherwise)
#   3. munge key + munged (authentication between the Slurm daemons and clients)
#   4. /etc/slurm/slurm.conf with this node's real CPUs and memory (from `slurmd -C`)
#   5. start slurmctld and slurmd, wait for the node to be idle, submit `sbatch --wrap hostname`
#
# Environment knobs: SLURM_PARTITION (default: debug), SKIP_APT=1 (packages already installed).
set -euo pipefail

PARTITION="${SLURM_PARTITION:-debug}"
CONF_DIR=/etc/slurm
LOG_DIR=/var/log/slurm
log() { echo "[slurm-setup] $*"; }

if [ "$(id -u)" -ne 0 ]; then
  echo "[slurm-setup] must run as root (installs packages, writes /etc/slurm, starts daemons)" >&2
  exit 1
fi

# 1. packages ---------------------------------------------------------------------------------
if [ "${SKIP_APT:-0}" != "1" ] && ! command -v slurmctld >/dev/null 2>&1; then
  log "installing slurmctld slurmd slurm-client munge"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
fi
for bin in slurmctld slurmd sbatch munged; do
  command -v "$bin" >/dev/null 2>&1 || { echo "[slurm-setup] $bin not found after install" >&2; exit 1; }
done

# 2. hostname resolution --------------------------------------------------------------------------
HOST="$(hostname -s)"
if ! getent hosts "$HOST" >/dev/null 2>&1; then
  log "adding $HOST to /etc/hosts"
  echo "127.0.0.1 $HOST" >>/etc/hosts
fi

# 3. munge ----------------------------------------------------------------------------------------
install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge
install -d -o munge -g munge -m 0755 /run/munge
if [ ! -s /etc/munge/munge.key ]; then
  log "creating munge key"
  mungekey --create --keyfile=/etc/munge/munge.key
fi
chown munge:munge /etc/munge/munge.key
chmod 0400 /etc/munge/munge.key
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  log "starting munged"
  rm -f /run/munge/munged.pid
  runuser -u munge -- /usr/sbin/munged --force
  for _ in $(seq 1 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
  munge -n | unmunge >/dev/null
fi

# 4. slurm.conf -----------------------------------------------------------------------------------
# `slurmd -C` prints this node's hardware line, e.g.
#   NodeName=vm CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105
NODE_LINE="$(slurmd -C | head -n 1)"
CPUS="$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$NODE_LINE")"
MEM="$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$NODE_LINE")"
install -d -o slurm -g slurm -m 0755 /var/spool/slurmctld /var/spool/slurmd "$LOG_DIR" /run/slurm
cat >"$CONF_DIR/slurm.conf.new" <<EOF
# written by .ci/slurm-setup.sh: one-node cluster on loopback, no cgroups
ClusterName=assay-local
SlurmctldHost=${HOST}(127.0.0.1)
SlurmUser=slurm
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
MailProg=/bin/true
SwitchType=switch/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
# cancel a job whose dependency failed instead of leaving it pending forever
DependencyParameters=kill_invalid_depend
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmctldLogFile=${LOG_DIR}/slurmctld.log
SlurmdLogFile=${LOG_DIR}/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
# keep finished jobs visible to squeue/scontrol for 10 minutes
MinJobAge=600
MaxArraySize=10001
NodeName=${HOST} NodeAddr=127.0.0.1 CPUs=${CPUS} RealMemory=${MEM} State=UNKNOWN
PartitionName=${PARTITION} Nodes=${HOST} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
CHANGED=0
if ! cmp -s "$CONF_DIR/slurm.conf.new" "$CONF_DIR/slurm.conf" 2>/dev/null; then
  mv "$CONF_DIR/slurm.conf.new" "$CONF_DIR/slurm.conf"
  CHANGED=1
  log "wrote $CONF_DIR/slurm.conf (node $HOST: $CPUS CPUs, ${MEM} MB)"
else
  rm -f "$CONF_DIR/slurm.conf.new"
fi
chmod 0644 "$CONF_DIR/slurm.conf"

# 5. daemons --------------------------------------------------------------------------------------
running() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
stop_daemon() {  # stop one daemon started earlier by this script (via its pid file)
  if running "$1"; then
    kill "$(cat "$1")"
    for _ in $(seq 1 50); do running "$1" || break; sleep 0.1; done
  fi
}
if [ "$CHANGED" = 1 ]; then
  stop_daemon /run/slurm/slurmd.pid
  stop_daemon /run/slurm/slurmctld.pid
fi
if ! running /run/slurm/slurmctld.pid; then
  log "starting slurmctld"
  /usr/sbin/slurmctld
fi
for _ in $(seq 1 100); do scontrol ping 2>/dev/null | grep -q UP && break; sleep 0.2; done
scontrol ping | grep -q UP || { tail -n 30 "$LOG_DIR/slurmctld.log" >&2; exit 1; }
if ! running /run/slurm/slurmd.pid; then
  log "starting slurmd"
  /usr/sbin/slurmd
fi

state() { sinfo -h -n "$HOST" -o %T 2>/dev/null | head -n 1; }
for _ in $(seq 1 100); do
  case "$(state)" in
    idle*|mixed*|allocated*) break ;;
    down*|drain*|drained*) scontrol update NodeName="$HOST" State=RESUME 2>/dev/null || true ;;
  esac
  sleep 0.2
done
case "$(state)" in
  idle*|mixed*|allocated*) ;;
  *) echo "[slurm-setup] node $HOST is '$(state)'" >&2; scontrol show node "$HOST" >&2; tail -n 30 "$LOG_DIR/slurmd.log" >&2; exit 1 ;;
esac
sinfo

# smoke test: a one-line batch job must run and write its output
OUT="$(mktemp -d)"
chmod 0777 "$OUT"
JOB="$(sbatch --parsable --output="$OUT/%j.out" --wrap hostname)"
for _ in $(seq 1 150); do [ -s "$OUT/$JOB.out" ] && break; sleep 0.2; done
if [ "$(cat "$OUT/$JOB.out" 2>/dev/null)" != "$(hostname)" ]; then
  echo "[slurm-setup] smoke job $JOB did not produce the hostname" >&2
  scontrol show job "$JOB" >&2 || true
  tail -n 30 "$LOG_DIR/slurmd.log" >&2
  exit 1
fi
rm -rf "$OUT"
log "ok: 'sbatch --wrap hostname' ran as job $JOB on $(hostname); partition '$PARTITION'"

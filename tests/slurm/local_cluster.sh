#!/usr/bin/env bash
# A one-node Slurm cluster in a folder, for the tests whose names contain `slurm`: Debian's
# munged, slurmctld and slurmd (packages munge, slurmctld, slurmd, slurm-client; scripts/setup.sh
# --all installs them), configured under DIR on free ports, the node being this machine with all
# its CPUs and no GPU. Nothing outside DIR is written; `stop` ends the daemons and removes DIR.
# Slurm unpacked elsewhere (a GPU machine without package registries: scripts/gpu/lib.sh's
# gpu_slurm_setup) is found on PATH, its plugins in $ARGUS_SLURM_PLUGIN_DIR. The cluster is
# stopped when the process that started it ends, if `stop` did not come first.
# Usage: local_cluster.sh start DIR [GPUS]
#                              (prints SLURM_CONF=DIR/slurm.conf once sinfo sees the node idle;
#                              exit 77 when a package is missing or a daemon cannot start here,
#                              with the reason on stderr). GPUS (1-4) gives the node that many
#                              `gpu` GRES, stood in for by /dev/null, /dev/zero, ... (this machine
#                              has no GPU): Slurm grants and counts --gres=gpu:N requests and sets
#                              CUDA_VISIBLE_DEVICES, and nothing can use them as GPUs.
#        local_cluster.sh stop DIR
set -uo pipefail
cmd=${1:-}
dir=${2:-}
gpus=${3:-0}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

stop() {
  # Jobs first (a job's slurmstepd outlives slurmd), while the controller can still cancel them.
  if [ -f "$dir/slurm.conf" ] && [ -f "$dir/slurmctld.pid" ]; then
    SLURM_CONF="$dir/slurm.conf" scancel --quiet --user="$(id -un)" 2>/dev/null
    for _ in $(seq 50); do
      [ -z "$(SLURM_CONF="$dir/slurm.conf" squeue --noheader 2>/dev/null)" ] && break
      sleep 0.1
    done
  fi
  for pidfile in slurmd.pid slurmctld.pid munged.pid; do
    [ -f "$dir/$pidfile" ] && kill "$(cat "$dir/$pidfile" 2>/dev/null)" 2>/dev/null
  done
  for _ in $(seq 50); do
    alive=0
    for pidfile in slurmd.pid slurmctld.pid munged.pid; do
      [ -f "$dir/$pidfile" ] && kill -0 "$(cat "$dir/$pidfile" 2>/dev/null)" 2>/dev/null && alive=1
    done
    [ $alive -eq 0 ] && break
    sleep 0.1
  done
  for pidfile in slurmd.pid slurmctld.pid munged.pid; do
    [ -f "$dir/$pidfile" ] && kill -9 "$(cat "$dir/$pidfile" 2>/dev/null)" 2>/dev/null
  done
  rm -rf "$dir"
}

if [ "$cmd" = stop ]; then
  stop
  exit 0
fi
[ "$cmd" = start ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
for tool in munged slurmctld slurmd sinfo srun; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || {
    echo "local_cluster: $tool is not installed (Debian: munge slurmctld slurmd slurm-client;" \
      "scripts/setup.sh --all installs them)" >&2
    exit 77
  }
done
export PATH="$PATH:/usr/sbin"
mkdir -p "$dir/state" "$dir/spool" || exit 77
dir=$(cd "$dir" && pwd)
# A free TCP port each for the controller and the node daemon.
read -r ctld_port slurmd_port < <(python3 -c 'import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])')
host=$(hostname -s)
head -c 1024 /dev/urandom >"$dir/munge.key" && chmod 400 "$dir/munge.key"
cat >"$dir/slurm.conf" <<CONF
ClusterName=argustest
SlurmctldHost=$host
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/munge
AuthInfo=socket=$dir/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
KillWait=2
$([ "$gpus" -gt 0 ] && echo "GresTypes=gpu")
$([ -n "${ARGUS_SLURM_PLUGIN_DIR:-}" ] && echo "PluginDir=$ARGUS_SLURM_PLUGIN_DIR")
NodeName=$host CPUs=$(nproc) State=UNKNOWN$([ "$gpus" -gt 0 ] && echo " Gres=gpu:$gpus")
PartitionName=argus Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
# Slurm's gpu GRES must name a character device per GPU (it sets CUDA_VISIBLE_DEVICES from their
# order); harmless ones stand in.
stand_ins=(/dev/null /dev/zero /dev/full /dev/urandom)
if [ "$gpus" -gt ${#stand_ins[@]} ]; then
  echo "local_cluster: at most ${#stand_ins[@]} counted GPUs" >&2
  exit 2
fi
for ((i = 0; i < gpus; i++)); do
  echo "NodeName=$host Name=gpu File=${stand_ins[$i]}"
done >"$dir/gres.conf"
export SLURM_CONF="$dir/slurm.conf"
# munged refuses root unless forced; the key and socket are this cluster's own.
munged --force --key-file="$dir/munge.key" --socket="$dir/munge.socket" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge.seed" ||
  { echo "local_cluster: munged did not start: $(tail -3 "$dir/munged.log" 2>/dev/null)" >&2; stop; exit 77; }
slurmctld -f "$SLURM_CONF" ||
  { echo "local_cluster: slurmctld did not start: $(tail -3 "$dir/slurmctld.log")" >&2; stop; exit 77; }
# slurmd sets up its cgroup plugin whatever the proctrack and task plugins are; in a container
# without systemd (the GPU machine) cgroup/v2 looks for systemd's delegation and fails, so the
# node daemon is retried with cgroup.conf settings that do without it.
started=0
for cgroup in "" "CgroupPlugin=cgroup/v2
IgnoreSystemd=yes" "CgroupPlugin=cgroup/v1"; do
  if [ -n "$cgroup" ]; then
    grep -q "cgroup" "$dir/slurmd.log" 2>/dev/null || break
    echo "$cgroup" >"$dir/cgroup.conf"
  fi
  if slurmd -f "$SLURM_CONF"; then
    started=1
    break
  fi
done
[ $started = 1 ] ||
  { echo "local_cluster: slurmd did not start: $(tail -3 "$dir/slurmd.log")" >&2; stop; exit 77; }
for _ in $(seq 100); do
  if sinfo --noheader --format=%t 2>/dev/null | grep -q idle; then
    # The cluster lives no longer than what started it (a test killed at its timeout cannot
    # stop it): a watcher, detached from this script's output, stops it after its owner ends.
    owner=$PPID
    self=$(readlink -f "$0")
    setsid bash -c 'while kill -0 "$1" 2>/dev/null && [ -d "$2" ]; do sleep 1; done
                    [ -d "$2" ] && "$3" stop "$2"' watcher "$owner" "$dir" "$self" \
      </dev/null >/dev/null 2>&1 &
    echo "SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  sleep 0.2
done
echo "local_cluster: the node did not become idle in 20 s: $(sinfo 2>&1 | tail -2);" \
  "$(tail -3 "$dir/slurmd.log" 2>/dev/null)" >&2
stop
exit 77

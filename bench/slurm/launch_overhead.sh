#!/usr/bin/env bash
# What running a plan's workers as Slurm jobs costs per task (argus query --executor slurm, with
# --slurm-batch and without), on the one-node cluster of tests/slurm/local_cluster.sh (this
# machine): build/bench/argus_bench_slurm TASKS ROUNDS (see its header) between the cluster's
# start and stop.
# Usage: bench/slurm/launch_overhead.sh   (TASKS, default 40; ROUNDS, default 3;
#                                          ARGUS_BUILD_DIR, default build)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bench="${ARGUS_BUILD_DIR:-$root/build}/bench/argus_bench_slurm"
[ -x "$bench" ] || { echo "launch_overhead: build $bench first (ninja argus_bench_slurm)" >&2; exit 1; }
dir=$(mktemp -d /tmp/argus-slurm-bench-XXXXXX)
trap '"$root/tests/slurm/local_cluster.sh" stop "$dir/cluster"' EXIT
"$root/tests/slurm/local_cluster.sh" start "$dir/cluster" >/dev/null
export SLURM_CONF="$dir/cluster/slurm.conf"
echo "Slurm $(sinfo --version | awk '{print $2}'), one node: $(nproc) CPUs ($(hostname -s))"
"$bench" "${TASKS:-40}" "${ROUNDS:-3}"

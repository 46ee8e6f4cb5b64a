#!/usr/bin/env bash
# What running a program as a Slurm job (argus query --executor slurm: one srun per program run)
# adds to each run, on the one-node cluster of tests/slurm/local_cluster.sh (this machine):
# RUNS runs of a trivial program (/bin/true) started directly and by
# `srun --nodes=1 --ntasks=1 --quiet --export=ALL`, one after another (ROUNDS rounds, each
# alternating the two), and the median wall time of each, in ms.
# Usage: bench/slurm/srun_overhead.sh   (RUNS, default 20; ROUNDS, default 3)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir=$(mktemp -d /tmp/argus-slurm-bench-XXXXXX)
trap '"$root/tests/slurm/local_cluster.sh" stop "$dir/cluster"' EXIT
"$root/tests/slurm/local_cluster.sh" start "$dir/cluster" >/dev/null
export SLURM_CONF="$dir/cluster/slurm.conf"
python3 - "${RUNS:-20}" "${ROUNDS:-3}" <<'PY'
import statistics, subprocess, sys, time
runs, rounds = int(sys.argv[1]), int(sys.argv[2])
ways = {"direct": ["/bin/true"],
        "srun": ["srun", "--nodes=1", "--ntasks=1", "--quiet", "--export=ALL", "--", "/bin/true"]}
times = {k: [] for k in ways}
for _ in range(rounds):
    for _ in range(runs):
        for name, argv in ways.items():
            t0 = time.perf_counter()
            subprocess.run(argv, check=True)
            times[name].append((time.perf_counter() - t0) * 1e3)
for name, ts in times.items():
    print(f"{name:7s} median {statistics.median(ts):8.2f} ms  p90 "
          f"{sorted(ts)[int(0.9 * (len(ts) - 1))]:8.2f} ms  ({len(ts)} runs)")
added = statistics.median(times["srun"]) - statistics.median(times["direct"])
print(f"added by srun per program run: {added:.2f} ms (median)")
PY

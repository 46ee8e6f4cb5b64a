#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): issue 7's quiet time taken apart. The turn's quiet time
# after another process's set-up end and after its exit (src/backends/region_trace/gpu_turn.h)
# are set apart: probe-disturb-experiment.sh answers the TMA GEMM's 8 probes with 8 processes at
# once under each setting of $SETTINGS (default below: `setup/exit` in ms, or `setup/exit/idle`
# where a process also gives the turn up after `idle` ms without a driver call once its traced
# launch is written, ARGUS_GPU_TURN_IDLE_MS), $ROUNDS rounds
# (default 3) alternating, between two one-at-a-time runs; then the multi-run benchmark
# (bench/probe_multirun) runs once under each setting of $BENCH (default: the two split ones).
# Prints the disturb table (probes more than 15 % off the one-at-a-time run) and, per bench
# setting, the timing rows and the largest latency difference. About 5 minutes. Since the
# eleventh session every holder also empties the L2 (ARGUS_GPU_TURN_L2=empty, the default), which
# made the quiet time unnecessary (experiments/HISTORY.md); set ARGUS_GPU_TURN_L2=none to study the quiet
# time alone.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
source scripts/gpu/lib.sh
gpu_setup
settings="${SETTINGS:-0/0 150/0 150/30 100/100 100/100/2}"
modes="alone"
for round in $(seq "${ROUNDS:-3}"); do
  for s in $settings; do
    IFS=/ read -r setup exit idle <<<"$s"
    modes+=" alone+quietsetup$setup+quietexit$exit${idle:++idle$idle}/8"
  done
done
MODES="$modes alone" OUT="$out/disturb" bash experiments/probe-isolation/probe-disturb-experiment.sh 2>&1 |
  grep -v "neighbour: $" | tail -$((4 + $(wc -w <<<"$modes") + 1))
gpu_build bench-build.log argus argus_inject
for s in ${BENCH:-150/0 150/30}; do
  IFS=/ read -r setup exit idle <<<"$s"
  ARGUS_GPU_TURN_QUIET_SETUP_MS="$setup" ARGUS_GPU_TURN_QUIET_EXIT_MS="$exit" \
    ARGUS_GPU_TURN_IDLE_MS="${idle:-0}" \
    timeout 150 bash bench/probe_multirun/run.sh "$B/argus" "/tmp/quiet-bench-${s//\//-}" \
    >"$out/bench-${s//\//-}.log" 2>&1
  echo "== bench, quiet set-up/exit[/idle] $s ms: exit $?"
  grep -E "^\| (1|8|16) \| (8|1|1b) " "/tmp/quiet-bench-${s//\//-}/summary.md"
  grep -E "largest" "$out/bench-${s//\//-}.log"
done

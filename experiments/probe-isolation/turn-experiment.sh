#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): the probe multi-run benchmark under different rules for
# the device's turn (src/backends/region_trace/gpu_turn.h), $REPEATS rounds (default 1; one
# round of one mode is about two minutes), the modes alternating within each round; prints the
# timing tables and latency comparisons. $MODES (default: shared none):
#   shared   the default: the context's teardown under the shared hold
#   none     ARGUS_GPU_TURN_TEARDOWN=none: the next probe's GPU work may run beside a teardown
#   idleN    ARGUS_GPU_TURN_IDLE_MS=N: a process gives the turn up after N ms without a driver
#            call once its traced launch is written (its host-side check runs while another
#            process has the GPU)
#   settleN  ARGUS_GPU_TURN_SETTLE_MS=N: wait N ms after taking the turn
#   noflush  ARGUS_GPU_TURN_IDLE_FLUSH=0: no CUPTI activity flush before an idle release
#   l2flush  ARGUS_TRACE_L2_FLUSH=1: every traced launch (reference and probes) starts with L2
#            emptied of the program's earlier work
# joined with +, e.g. idle2+settle5.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/gpu/lib.sh"
gpu_setup
gpu_build build.log argus argus_inject
for rep in $(seq "${REPEATS:-1}"); do
  for mode in ${MODES:-shared none}; do
    env=()
    for part in ${mode//+/ }; do
      case "$part" in
        shared) ;;
        none) env+=(ARGUS_GPU_TURN_TEARDOWN=none) ;;
        idle[0-9]*) env+=(ARGUS_GPU_TURN_IDLE_MS="${part#idle}") ;;
        settle[0-9]*) env+=(ARGUS_GPU_TURN_SETTLE_MS="${part#settle}") ;;
        noflush) env+=(ARGUS_GPU_TURN_IDLE_FLUSH=0) ;;
        l2flush) env+=(ARGUS_TRACE_L2_FLUSH=1) ;;
        *) echo "unknown mode $part (shared, none, idleN, settleN, noflush, l2flush)"; exit 2 ;;
      esac
    done
    env "${env[@]}" timeout 250 bash bench/probe_multirun/run.sh "$B/argus" \
      "/tmp/turn-$mode-$rep" >"$out/turn-$mode-$rep.log" 2>&1
    echo "== turn $mode, round $rep: exit $?"
    cat "/tmp/turn-$mode-$rep/summary.md" "/tmp/turn-$mode-$rep/equivalence.md" 2>/dev/null
  done
done

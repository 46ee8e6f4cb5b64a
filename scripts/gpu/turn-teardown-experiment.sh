#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): does a probe process's context teardown need the device's
# shared hold (src/backends/region_trace/gpu_turn.h)? While one process tears down, the next
# cannot take the turn; without the hold the teardown runs beside the next probe's measured work.
# Runs the probe multi-run benchmark with teardown shared (the default) and
# ARGUS_GPU_TURN_TEARDOWN=none, $REPEATS rounds (default 1; one round is about two minutes), and
# prints the timing tables and latency comparisons. $MODES picks the modes (default: shared none).
set -uo pipefail
out="${OUT:-/tmp/argus-out}"
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/tmp/argus-deps/usr/lib/x86_64-linux-gnu
B=$(scripts/gpu/device-build.sh argus argus_inject 2>"$out/build.log") || { tail -30 "$out/build.log"; exit 1; }
# $REPEATS rounds (default 1), the two modes alternating within each.
for rep in $(seq "${REPEATS:-1}"); do
  for mode in ${MODES:-shared none}; do
    ARGUS_GPU_TURN_TEARDOWN=$mode timeout 250 bash bench/probe_multirun/run.sh "$B/argus" \
      "/tmp/teardown-$mode-$rep" >"$out/teardown-$mode-$rep.log" 2>&1
    echo "== teardown $mode, round $rep: exit $?"
    cat "/tmp/teardown-$mode-$rep/summary.md" "/tmp/teardown-$mode-$rep/equivalence.md" 2>/dev/null
  done
done

#!/usr/bin/env bash
# Runs ON the GPU machine: the seed tracing-overhead benchmark with both trace time bases
# (globaltimer, clock64) at three sizes, to choose the default. Logs under $OUT (default /tmp/argus-out).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/gpu/lib.sh"
gpu_setup
gpu_build build.log
for tb in globaltimer clock64; do
  echo "=== time base $tb"
  TIME_BASE=$tb INNER=8,64,512 REPS=100 WARMUP=10 SKIP_PROTON=1 bash bench/trace_overhead/run.sh $B/argus /tmp/b-$tb > "$out/bench-$tb.log" 2>&1
  sed -n '/^kernel /,$p' /tmp/b-$tb/summary.txt | head -12
done

#!/usr/bin/env bash
# Runs ON the GPU machine: the seed tracing-overhead benchmark with both trace time bases
# (globaltimer, clock64) at three sizes, to choose the default. Logs under $OUT.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
B=$(scripts/gpu/device-build.sh 2>$OUT/build.log) || { tail -30 $OUT/build.log; exit 1; }
export LD_LIBRARY_PATH=/tmp/argus-deps/usr/lib/x86_64-linux-gnu
for tb in globaltimer clock64; do
  echo "=== time base $tb"
  TIME_BASE=$tb INNER=8,64,512 REPS=100 WARMUP=10 SKIP_PROTON=1 bash bench/trace_overhead/run.sh $B/argus /tmp/b-$tb > $OUT/bench-$tb.log 2>&1
  sed -n '/^kernel /,$p' /tmp/b-$tb/summary.txt | head -12
done

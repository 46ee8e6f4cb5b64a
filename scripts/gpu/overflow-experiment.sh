#!/usr/bin/env bash
# Runs ON the GPU machine: the seed tracing-overhead benchmark with the trace pass's two overflow
# modes (count: atomic on overflow; clamp: branch-free, sequence-numbered records) at three sizes.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
out="${OUT:-/tmp/argus-out}"
mkdir -p "$out"
B=$(scripts/gpu/device-build.sh 2>"$out/build.log") || { tail -30 "$out/build.log"; exit 1; }
export LD_LIBRARY_PATH=/tmp/argus-deps/usr/lib/x86_64-linux-gnu
for mode in count clamp; do
  echo "=== overflow=$mode"
  PASS_OPTION=overflow=$mode INNER=8,64,512 REPS=200 SKIP_PROTON=1 \
    bash bench/trace_overhead/run.sh "$B/argus" /tmp/b-$mode >"$out/bench-$mode.log" 2>&1
  sed -n '/^kernel /,$p' /tmp/b-$mode/summary.txt | head -8
  grep -E "records|dropped" /tmp/b-$mode/summary.txt | head -3
done

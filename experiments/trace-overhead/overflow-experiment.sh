#!/usr/bin/env bash
# Runs ON the GPU machine: the seed tracing-overhead benchmark with the trace pass's two overflow
# modes (count: atomic on overflow; clamp: branch-free, sequence-numbered records) at three sizes.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/gpu/lib.sh"
gpu_setup
gpu_build build.log
for mode in count clamp; do
  echo "=== overflow=$mode"
  PASS_OPTION=overflow=$mode INNER=8,64,512 REPS=200 SKIP_PROTON=1 \
    bash bench/trace_overhead/run.sh "$B/argus" /tmp/b-$mode >"$out/bench-$mode.log" 2>&1
  sed -n '/^kernel /,$p' /tmp/b-$mode/summary.txt | head -8
  grep -E "records|dropped" /tmp/b-$mode/summary.txt | head -3
done

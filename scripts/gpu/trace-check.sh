#!/usr/bin/env bash
# Runs ON the GPU machine: builds Argus, runs the `gpu` tests, and the seed tracing-overhead
# benchmark at three sizes without the Proton part (a quick check after a tracer change).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_setup
gpu_build build.log
ctest --test-dir "$B" -L gpu --output-on-failure >"$out/ctest-gpu.log" 2>&1
grep -E "tests passed|Failed|^(ok|FAIL)" "$out/ctest-gpu.log" | head -20
INNER=${INNER:-8,64,512} REPS=${REPS:-200} SKIP_PROTON=1 \
  bash bench/trace_overhead/run.sh "$B/argus" /tmp/argus-bench >"$out/bench.log" 2>&1
sed -n '/^kernel /,$p' /tmp/argus-bench/summary.txt | head -12

#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): how long a Triton program takes to exit, with and without
# Argus's injection library. A Triton probe process was seen to stay a zombie holding GPU memory
# for ~10 s after its script finished (experiments/triton-probes/triton-probe-diag.sh). Runs
# examples/triton_matmul/run.py three times each: plain; under libargus_inject.so; under it with
# kernel times off (ARGUS_TRACE_KERNEL_TIMES=0, no CUPTI activity); under it with the GPU turn
# (ARGUS_GPU_TURN). Prints, per run, the time to PASS (the script's last line) and from PASS to
# the process's end as its parent sees it. Under three minutes.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/gpu/lib.sh"
gpu_setup
gpu_build build.log argus_inject
inject="$B/src/backends/region_trace/libargus_inject.so"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
time_run() {  # label env...
  local label=$1 t0 tpass tend
  shift
  t0=$(date +%s%N)
  env "$@" python3 -u examples/triton_matmul/run.py 2>&1 | while IFS= read -r line; do
    [[ $line == PASS* ]] && date +%s%N >/tmp/exit-time.pass
  done
  tend=$(date +%s%N)
  tpass=$(cat /tmp/exit-time.pass 2>/dev/null || echo "$tend")
  rm -f /tmp/exit-time.pass
  echo "$label: to PASS $(((tpass - t0) / 1000000)) ms, PASS to exit $(((tend - tpass) / 1000000)) ms"
}
for rep in 1 2 3; do
  time_run "plain $rep"
  time_run "inject $rep" CUDA_INJECTION64_PATH="$inject" ARGUS_TRACE_DIR="/tmp/exit-time-$rep"
  time_run "inject, no kernel times $rep" CUDA_INJECTION64_PATH="$inject" \
    ARGUS_TRACE_DIR="/tmp/exit-time-nk-$rep" ARGUS_TRACE_KERNEL_TIMES=0
  time_run "inject + GPU turn $rep" CUDA_INJECTION64_PATH="$inject" \
    ARGUS_TRACE_DIR="/tmp/exit-time-turn-$rep" ARGUS_GPU_TURN=/tmp/argus-exit-time.turn
done 2>&1 | tee "$out/triton-exit-time.txt"

#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): starts a small CUDA program N times under
# libargus_cupti_sass.so with the pc_mapping collection's settings and counts how often it
# crashes, for each ARGUS_CUPTI_INIT mode in $MODES (default "early inline"). The program
# (python3 with ctypes, no torch) initialises the driver, counts devices, retains the primary
# context and lives 0.3 s more, like a program's start-up while the early profiler
# initialisation runs on its own thread. argus_triton_painted_gpu once died here with SIGSEGV
# in a thread that was not Python's main one while torch.cuda.is_available() was in cuInit.
# Usage: N=100 MODES="early inline" cupti-init-stress.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_setup
gpu_build stress-build.log argus_cupti_sass
lib=$(find "$B" -name libargus_cupti_sass.so | head -1)
program='
import ctypes, time
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0
n = ctypes.c_int()
assert cuda.cuDeviceGetCount(ctypes.byref(n)) == 0 and n.value > 0
dev, ctx = ctypes.c_int(), ctypes.c_void_p()
assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
time.sleep(0.3)
'
for mode in ${MODES:-early inline}; do
  crashes=0 others=0
  start=$(date +%s)
  for i in $(seq "${N:-100}"); do
    d=/tmp/stress/$mode/$i; mkdir -p $d
    CUDA_INJECTION64_PATH="$lib" ARGUS_OUT_DIR=$d ARGUS_PC_KERNELS=none ARGUS_SASS_METRICS=smsp__sass_inst_executed \
      ARGUS_SASS_GRANULARITY=gpu ARGUS_CUPTI_INIT=$mode python3 -X faulthandler -c "$program" >$d/log 2>&1
    rc=$?
    if [ $rc -eq 139 ] || grep -q "Segmentation fault" $d/log; then crashes=$((crashes + 1)); cp $d/log "$out/crash-$mode-$i.log"
    elif [ $rc -ne 0 ]; then others=$((others + 1)); cp $d/log "$out/fail-$mode-$i.log"; fi
  done
  echo "ARGUS_CUPTI_INIT=$mode: ${N:-100} runs, $crashes crashed (SIGSEGV), $others failed otherwise, $(($(date +%s) - start)) s"
done

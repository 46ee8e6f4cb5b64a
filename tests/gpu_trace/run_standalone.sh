#!/usr/bin/env bash
# Builds libargus_inject.so and the end-to-end test without CMake (plain g++/nvcc command lines,
# for machines without the project's build dependencies, e.g. the GPU machine) and runs the test
# under the injection library. Usage: tests/gpu_trace/run_standalone.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build-gpu-trace}"
cuda="${CUDA_HOME:-/usr/local/cuda}"
mkdir -p "$build"
src="$root/src/backends/region_trace"
cupti_inc="$cuda/include"
[ -f "$cuda/extras/CUPTI/include/cupti.h" ] && cupti_inc="$cuda/extras/CUPTI/include"
g++ -std=c++20 -O2 -fPIC -shared -fvisibility=hidden -Wall -Wextra \
  -I"$root/include" -isystem "$cuda/include" -isystem "$cupti_inc" \
  "$src/inject.cpp" "$src/vendor_api.cpp" "$src/trace_file.cpp" \
  -o "$build/libargus_inject.so" -ldl -lpthread
nm -D --defined-only "$build/libargus_inject.so" | grep -w InitializeInjection
nvcc -std=c++17 -O2 -arch=sm_90a -I"$root/include" \
  "$root/tests/gpu_trace/main.cu" "$root/tests/gpu_trace/trace_writer.cu" \
  "$root/tests/gpu_trace/plain_kernel.cu" -o "$build/argus_gpu_trace_test"
if [ "${BUILD_ONLY:-0}" = 1 ]; then exit 0; fi
out="$build/trace-out"
rm -rf "$out"
echo "== without the injection library"
set +e
"$build/argus_gpu_trace_test"; echo "exit $?"
echo "== under the injection library"
CUDA_INJECTION64_PATH="$build/libargus_inject.so" ARGUS_TRACE_DIR="$out" ARGUS_TRACE_CAPACITY=16 \
  ARGUS_TRACE_VERBOSE=1 "$build/argus_gpu_trace_test"
rc=$?
echo "exit $rc"
echo "== full-buffer form"
CUDA_INJECTION64_PATH="$build/libargus_inject.so" ARGUS_TRACE_DIR="$out-full" \
  ARGUS_TRACE_CAPACITY=16 ARGUS_TRACE_FULL=1 "$build/argus_gpu_trace_test" | tail -2
rc_full=${PIPESTATUS[0]}
echo "exit $rc_full"
echo "== kernels.jsonl"; cat "$out/kernels.jsonl"
echo "== files"; ls -la "$out"
[ "$rc" = 0 ] && [ "$rc_full" = 0 ]

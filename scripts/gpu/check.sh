#!/usr/bin/env bash
# Runs ON the GPU machine (see scripts/gpu/device-build.sh): builds Argus, runs every test (the
# `gpu` ones included), answers one region query on the TMA GEMM, and runs the seed's
# tracing-overhead benchmark. Writes logs under $OUT (default /tmp/argus-out) and prints a summary.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_setup
cd "$gpu_root"
gpu_build build.log
build="$B"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >"$out/gpu.txt"

echo "== ctest (all but the formatter check, which needs clang-format)"
ctest --test-dir "$build" -E clang_format --output-on-failure -j 8 >"$out/ctest.log" 2>&1
grep -E "tests passed|FAILED|Failed|\(Skipped\)" "$out/ctest.log" | head -20
grep -A30 "argus_query_timings_gpu" "$out/ctest.log" | grep -E "^(ok|FAIL)" | head -20

echo "== argus query (TMA GEMM mainloop, producer role)"
"$build/argus" query --program examples/tma_gemm/argus.yaml --region mainloop \
  --signals duration --scope role=producer --workspace /tmp/argus-ws \
  --chrome-trace "$out/tma_gemm_timeline.json" >"$out/query.txt" 2>&1
tail -16 "$out/query.txt"

echo "== seed tracing-overhead benchmark"
bash bench/trace_overhead/run.sh "$build/argus" /tmp/argus-bench >"$out/bench.log" 2>&1
cp /tmp/argus-bench/summary.md "$out/bench_summary.md" 2>/dev/null
tail -45 "$out/bench.log"

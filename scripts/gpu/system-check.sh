#!/usr/bin/env bash
# Runs ON the GPU machine (issue 9, one GPU): builds only the system tracer, the overlap stand-in
# pipeline and argus; records the stand-in communication under libargus_system_trace.so,
# measures the (S, R, P) pipeline grid, asks argus for tma_gemm region timings at three shapes
# and for the system_trace recipe's signals. Everything lands in $OUT. This is NOT a multi-GPU
# all-gather measurement.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${OUT:-/tmp/argus-out}"
mkdir -p "$out"
deps=/tmp/argus-deps
[ -d "$deps/usr" ] || for deb in "$root"/.debs/*.deb; do dpkg -x "$deb" "$deps"; done
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu"
B=/tmp/argus-build
cmake -S "$root" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$deps/usr" \
  -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" >/tmp/build.log 2>&1 || { tail -20 /tmp/build.log; exit 1; }
cmake --build "$B" -j "$(nproc)" --target argus_system_trace_inject argus_overlap_pipeline \
  argus_example_tma_gemm >>/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
# argus (the CLI) builds in the background while the stand-in is measured.
(cmake --build "$B" -j 12 --target argus argus_inject >/tmp/build-argus.log 2>&1; echo $? >/tmp/argus-built) &
LIB="$B/src/backends/system_trace/libargus_system_trace.so"
P="$B/bench/overlap/argus_overlap_pipeline"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv
CUDA_INJECTION64_PATH=$LIB ARGUS_SYSTEM_TRACE_OUT="$out/comm_trace.jsonl" \
  ARGUS_SYSTEM_TRACE_LABELS="stand_in=d2d_copy_kernel,gpus=1" \
  "$P" comm 512:4096,1024:1024,2048:2048 2>&1 | tail -3
CUDA_INJECTION64_PATH=$LIB ARGUS_SYSTEM_TRACE_OUT="$out/gemm_trace.jsonl" \
  "$B/examples/argus_example_tma_gemm" 2>&1 | tail -2
for s in "512 1024 4096" "1024 1024 1024" "2048 512 2048"; do "$P" grid $s >>"$out/grid.jsonl"; done
wc -l "$out"/*.jsonl
while [ ! -f /tmp/argus-built ]; do sleep 1; done
[ "$(cat /tmp/argus-built)" = 0 ] || { tail -30 /tmp/build-argus.log; exit 1; }
ws=/tmp/argus-ws
for s in "512 1024 4096" "1024 1024 1024" "2048 512 2048"; do
  set -- $s
  spec="$root/examples/tma_gemm/argus_${1}x${2}x${3}.yaml"
  sed "s|command: \[\"{exe}\"\]|command: [\"{exe}\", \"$1\", \"$2\", \"$3\"]|" \
    "$root/examples/tma_gemm/argus.yaml" >"$spec"
  timeout 60 "$B/argus" query --json --workspace $ws --program "$spec" --region "" \
    --signals duration >"$out/regions_${1}x${2}x${3}.json" 2>>"$out/log.txt" ||
    tail -5 "$out/log.txt"
done
timeout 40 "$B/argus" query --json --workspace $ws --program "$root/examples/tma_gemm/argus.yaml" \
  --signals kernel_timeline,launch_overhead,comm_chunk_time >"$out/recipe_query.json" \
  2>>"$out/log.txt" || tail -5 "$out/log.txt"
python3 -c "import json;r=json.load(open('$out/recipe_query.json'));print({k:v.get('status') for k,v in r['signals'].items()})" 2>&1 | tail -2
ls -la "$out"

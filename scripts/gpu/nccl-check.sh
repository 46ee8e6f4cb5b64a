#!/usr/bin/env bash
# Runs ON a machine with 2+ GPUs (issue 9; carry .debs): the NCCL all-gather + GEMM overlap
# client end to end, on every GPU of the machine (one rank each). Builds the system tracer, argus and bench/overlap's NCCL pipeline against
# the NCCL that PyTorch ships; records chunked all-gathers for every (S, R) under
# libargus_system_trace.so; asks argus for tma_gemm's region timings at five shapes; measures
# the whole (S, R, P) grid and the PyTorch baseline; ranks with argus_overlap. Results go to
# $OUT/nccl.tar.gz (one file: the device tool brings back at most eight).
set -uo pipefail
# Never NVLink multicast on shared hosts (the device tool's KINDS.md): in every process.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PATH=/usr/local/cuda/bin:$PATH
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${OUT:-/tmp/argus-out}"
res=/tmp/nccl-results
mkdir -p "$out" "$res"
finish() {
  tar -C /tmp -czf "$out/nccl.tar.gz" nccl-results
  ls -la "$res"
}
trap finish EXIT
SHAPES=("2048 1024 4096" "4096 512 8192" "8192 1024 4096" "8192 2048 8192" "16384 1024 2048")
COMM=2048:4096,4096:8192,8192:4096,8192:8192,16384:2048
{
  nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,driver_version --format=csv
  nvidia-smi topo -m
  python3 -c 'import torch; print("torch", torch.__version__, "gpus", torch.cuda.device_count(), "nccl", torch.cuda.nccl.version())'
} >"$res/machine.txt" 2>&1
cat "$res/machine.txt"
gpus=$(nvidia-smi -L | grep -c "^GPU ")
echo "$gpus GPUs: every rank count below is $gpus"
nccl_root=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])')
echo "NCCL from $nccl_root"
export LD_LIBRARY_PATH="$nccl_root/lib:/tmp/argus-deps/usr/lib/x86_64-linux-gnu"
t0=$(date +%s)
B=$(ARGUS_BUILD_DIR=/tmp/argus-build-nccl ARGUS_NCCL_ROOT="$nccl_root" \
  "$root/scripts/gpu/device-build.sh" argus_system_trace_inject argus_overlap_nccl argus_overlap \
  argus_example_tma_gemm argus argus_inject 2>"$res/build.log") ||
  { tail -30 "$res/build.log"; exit 1; }
echo "build: $(($(date +%s) - t0)) s"
LIB="$B/src/backends/system_trace/libargus_system_trace.so"
P="$B/bench/overlap/argus_overlap_nccl"

# NCCL's transport between the two GPUs, once.
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH "$P" --reps 1 comm 2048:4096 >"$res/nccl_debug.log" 2>&1
grep -E "NCCL version|via P2P|NVLS|nChannels|Connected all" "$res/nccl_debug.log" | sort | uniq -c | head -12

t0=$(date +%s)
CUDA_INJECTION64_PATH=$LIB ARGUS_SYSTEM_TRACE_OUT="$res/comm_trace.jsonl" \
  ARGUS_SYSTEM_TRACE_LABELS="collective=all_gather,gpus=$gpus" \
  timeout 240 "$P" comm "$COMM" 2>&1 | tail -3
echo "comm sweep: $(($(date +%s) - t0)) s"
python3 - "$res/comm_trace.jsonl" <<'EOF' | tee "$res/comm_ctas.txt"
# Did NCCL run the CTA count asked for? Grid sizes of NCCL kernels per `sms=` label.
import json, sys, collections
ranges, kernels = {}, []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("type") == "kernel" and "nccl" in r["name"].lower():
        kernels.append(r)
grids = collections.Counter((k["name"].split("(")[0][:40], k["grid"][0]) for k in kernels)
for (name, g), n in sorted(grids.items()):
    print(f"{n:6d} x {name} grid {g}")
EOF

t0=$(date +%s)
for s in "${SHAPES[@]}"; do timeout 120 "$P" grid $s >>"$res/grid.jsonl" 2>>"$res/grid.err" || echo "grid $s failed: $(tail -2 "$res/grid.err")"; done
echo "grid: $(($(date +%s) - t0)) s"
t0=$(date +%s)
timeout 240 python3 "$root/bench/overlap/torch_baseline.py" $(for s in "${SHAPES[@]}"; do set -- $s; echo "$1,$2,$3"; done) \
  >"$res/torch.jsonl" 2>"$res/torch.err" || tail -5 "$res/torch.err"
echo "torch: $(($(date +%s) - t0)) s"
cat "$res/torch.jsonl"

ws=/tmp/argus-ws-nccl
query_shape() {  # M N K: argus's region timings of tma_gemm at that shape
  local spec="$root/examples/tma_gemm/argus_${1}x${2}x${3}.yaml" t0
  t0=$(date +%s)
  sed "s|command: \[\"{exe}\"\]|command: [\"{exe}\", \"$1\", \"$2\", \"$3\"]|" \
    "$root/examples/tma_gemm/argus.yaml" >"$spec"
  timeout 150 "$B/argus" query --json --workspace $ws --program "$spec" --region "" \
    --signals duration >"$res/regions_${1}x${2}x${3}.json" 2>>"$res/query.log" ||
    { echo "query $1x$2x$3 failed:"; tail -5 "$res/query.log"; }
  echo "query $1x$2x$3: $(($(date +%s) - t0)) s"
}
regions=()
for s in "${SHAPES[@]}"; do
  set -- $s
  query_shape "$1" "$2" "$3"
  regions+=(--regions "$1,$2,$3=$res/regions_${1}x${2}x${3}.json")
  # The same N and K with at most one CTA per SM (one wave of <= 132 tiles).
  rows=$((64 * (132 / ($2 / 128))))
  [ -f "$res/regions_${rows}x${2}x${3}.json" ] || query_shape "$rows" "$2" "$3"
  regions+=(--alone "$1,$2,$3=$res/regions_${rows}x${2}x${3}.json")
done
"$B/bench/overlap/argus_overlap" --trace "$res/comm_trace.jsonl" --source nccl --ranks "$gpus" \
  --comm-sms 2,4,8,16,32 "${regions[@]}" --grid "$res/grid.jsonl" --baseline "$res/torch.jsonl" \
  --json "$res/overlap.json" 2>&1 | tee "$res/overlap.txt" | grep -E "^GEMM|top-|PyTorch"
# The same client with t_comm asked of argus (system_trace recipe on nccl_comm.yaml, run.gpus:
# all) instead of the direct trace.
ARGUS_ALLOW_OUTSIDE_SOURCES=1 CPATH="$nccl_root/include" LIBRARY_PATH="$nccl_root/lib" \
  timeout 200 "$B/argus" query --json \
  --program "$root/bench/overlap/nccl_comm.yaml" --workspace "$ws" \
  --signals comm_chunk_time,launch_overhead,comm_throughput,kernel_timeline \
  >"$res/comm_query.json" 2>>"$res/query.log" || tail -5 "$res/query.log"
"$B/bench/overlap/argus_overlap" --comm-report "$res/comm_query.json" --source nccl \
  --ranks "$gpus" --comm-sms 2,4,8,16,32 "${regions[@]}" --grid "$res/grid.jsonl" \
  --baseline "$res/torch.jsonl" --json "$res/overlap_from_query.json" 2>&1 |
  grep -E "^GEMM|top-" | sed 's/^/[query] /'

#!/usr/bin/env bash
# Argus on the example kernels: region trees, a PTX round trip, a measurement plan and a region
# query (observed durations where a GPU exists). Says plainly what it skipped and why.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ARGUS_BUILD_DIR:-$root/build}"
argus="$build/argus"
[ -x "$argus" ] || { echo "demo: $argus not built; run scripts/setup.sh first" >&2; exit 1; }
cd "$root"
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

for example in nested_regions tma_gemm warp_specialized; do
  step "argus regions examples/$example/kernel.cu"
  "$argus" regions "examples/$example/kernel.cu"
done

step "argus ptx print: parse and print the TMA GEMM's PTX, compare machine code with ptxas"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
nvcc -arch=sm_90a -ptx -I include -o "$tmp/gemm.ptx" examples/tma_gemm/kernel.cu
"$argus" ptx print "$tmp/gemm.ptx" -o "$tmp/printed.ptx"
ptxas -arch=sm_90a -o "$tmp/a.cubin" "$tmp/gemm.ptx"
ptxas -arch=sm_90a -o "$tmp/b.cubin" "$tmp/printed.ptx"
if cmp -s "$tmp/a.cubin" "$tmp/b.cubin"; then
  echo "printed PTX compiles to the identical cubin ($(wc -l <"$tmp/gemm.ptx") PTX lines)"
else
  echo "demo: printed PTX gives a different cubin" >&2
  exit 1
fi

step "argus plan: what answering a region query takes, and why runs are split"
"$argus" plan --program examples/tma_gemm/argus.yaml --region mainloop \
  --signals duration,inst_mix,barrier_inst,op_latency --explain

step "argus query: observed durations of the TMA GEMM's mainloop subtree"
# Builds the variants on the CPU; the GPU collection runs where there is a GPU and is reported
# as skipped (with the reason) where there is none.
"$argus" query --program examples/tma_gemm/argus.yaml --region mainloop --signals duration \
  --workspace "$build/demo-workspace"

step "Triton: the region tree of a Triton kernel's TTGIR (Argus markers; same IDs as its PTX)"
"$argus" regions tests/data/triton/matmul_tma_argus.ttgir
"$argus" regions tests/data/ptx/triton_matmul_tma_argus.ptx

step "Python client: the same engine from Python (python/argus)"
ARGUS_BIN="$argus" "$root/.venv/bin/python" - <<'PY'
import argus
plan = argus.plan("examples/tma_gemm/argus.yaml", kernel="tma_gemm", region="mainloop",
                  signals=["duration", "inst_executed", "op_latency"])
print(f"{len(plan['plan']['tasks'])} tasks; collections:", ", ".join(c["key"] for c in plan["collections"]))
try:
    argus.plan("examples/tma_gemm/argus.yaml", kernel="tma_gemm", region="no_such_region",
               signals=["duration"])
except argus.ArgusError as e:
    print("ArgusError:", e.message.splitlines()[0])
PY

step "GPU collections"
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q GPU; then
  # setup.sh builds argus alone (scripts/test.sh builds everything): the examples come here.
  cmake --build "$build" -j "$(nproc)" --target argus_example_nested_regions \
    argus_example_tma_gemm argus_example_warp_specialized
  for example in nested_regions tma_gemm warp_specialized; do
    echo "-- examples/$example (correctness against the CPU reference)"
    "$build/examples/argus_example_$example"
  done
else
  echo "skipped (no GPU on this machine):"
  echo "  - the region_trace collection of the query above (its report says so)"
  echo "  - attributed PC evidence (CUPTI SASS metrics, PC sampling, ncu) and op_latency probes"
  echo "  - Triton variants (argus build on examples/triton_matmul runs the script on the GPU)"
  echo "  - correctness runs of examples/nested_regions, tma_gemm, warp_specialized"
fi

#!/usr/bin/env bash
# Argus on the example kernels: region trees from the CUDA sources, a PTX round trip, and (where
# a GPU exists) the examples' own correctness runs. Says plainly what it skipped and why.
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

step "GPU collections"
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q GPU; then
  for example in nested_regions tma_gemm warp_specialized; do
    echo "-- examples/$example (correctness against the CPU reference)"
    "$build/examples/argus_example_$example"
  done
else
  echo "skipped (no GPU on this machine):"
  echo "  - correctness runs of examples/nested_regions, tma_gemm, warp_specialized"
  echo "Region timing, hardware counters and probes are not built yet (argus query is a later issue)."
fi

#!/usr/bin/env bash
# Regenerates tests/data/ptx/cutlass_54_fp8_gemm.ptx: the PTX of CUTLASS's example 54 (FP8
# warp-specialized cooperative GEMM), unmodified from the nvidia-cutlass wheel that
# scripts/setup.sh installs (.venv/cutlass), through examples/cutlass_hopper/fp8_gemm_54's
# wrapper and with its spec's flags. NVCC overrides the compiler.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
src="$root/.venv/cutlass"
[ -d "$src/include" ] || { echo "make_cutlass_fixture: no $src; run scripts/setup.sh" >&2; exit 1; }
"$nvcc" -ptx -lineinfo -std=c++17 -O3 -arch=sm_90a --expt-relaxed-constexpr \
  -DCUTLASS_ENABLE_TENSOR_CORE_MMA=1 -DCUTE_USE_PACKED_TUPLE=1 -DNDEBUG \
  -I"$src/include" -I"$src/tools/util/include" -I"$src/examples/common" \
  -I"$src/examples/54_hopper_fp8_warp_specialized_gemm" \
  "$root/examples/cutlass_hopper/fp8_gemm_54/fp8_gemm_54.cu" -o "$here/cutlass_54_fp8_gemm.ptx"
echo "wrote $here/cutlass_54_fp8_gemm.ptx ($(wc -c <"$here/cutlass_54_fp8_gemm.ptx") bytes)"

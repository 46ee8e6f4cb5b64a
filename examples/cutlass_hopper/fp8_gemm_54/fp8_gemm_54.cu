// CUTLASS example 54 (Hopper FP8 warp-specialized GEMM), unmodified: this file only includes
// the example's source from the nvidia-cutlass wheel (.venv/cutlass, made by scripts/setup.sh),
// because a spec's `sources` must lie under the spec's folder while its include_dirs may point
// anywhere. The source holds both main() and the kernels.
#include "54_hopper_fp8_warp_specialized_gemm.cu"

// CUTLASS example 49 (Hopper GEMM with the CollectiveBuilder), unmodified: this file only
// includes the example's source from the nvidia-cutlass wheel (.venv/cutlass, made by
// scripts/setup.sh), because a spec's `sources` must lie under the spec's folder while its
// include_dirs may point anywhere. The source holds both main() and the kernels.
#include "49_collective_builder.cu"

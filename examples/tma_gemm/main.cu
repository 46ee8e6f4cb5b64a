// Host driver of the tma_gemm example. Usage: argus_example_tma_gemm [M N K] (multiples of 64,
// 128, 64); the default 256 x 256 x 512 runs 8 K-iterations of 64.
#include "../common/gemm_check.h"
#include "tma_gemm.h"

int main(int argc, char** argv) {
  return example::runGemmExample("tma_gemm", argc, argv,
                                 {256, 256, 512, kTmaGemmBlockM, kTmaGemmBlockN, kTmaGemmBlockK},
                                 launchTmaGemm);
}

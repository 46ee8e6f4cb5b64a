// Host driver of the warp_specialized example. Usage: argus_example_warp_specialized [M N K]
// (multiples of 128, 128, 64); the default 512 x 512 x 1024 runs 16 K-iterations of 64.
#include "../common/gemm_check.h"
#include "warp_specialized.h"

int main(int argc, char** argv) {
  return example::runGemmExample("warp_specialized", argc, argv,
                                 {512, 512, 1024, kWsGemmBlockM, kWsGemmBlockN, kWsGemmBlockK},
                                 launchWarpSpecializedGemm);
}

// Host side of TMA: builds a CUtensorMap for a row-major FP16 matrix. cuTensorMapEncodeTiled is
// a driver API function; it is fetched through the runtime's entry-point query so the examples
// link only cudart (no -lcuda).
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

namespace example {

/// Encodes a tensor map for a row-major `rows` x `cols` FP16 matrix at `data` (cols contiguous)
/// with boxes of `boxRows` x `boxCols` elements and 128-byte swizzle. boxCols * 2 must be <= 128
/// (the swizzle span). Returns false (after printing why) when the driver rejects it.
inline bool encodeTensorMapF16(CUtensorMap* map, const void* data, std::uint64_t rows,
                               std::uint64_t cols, std::uint32_t boxRows, std::uint32_t boxCols) {
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult query{};
  const cudaError_t status = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &entry,
                                                              12000, cudaEnableDefault, &query);
  if (status != cudaSuccess || query != cudaDriverEntryPointSuccess || entry == nullptr) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled is not available: %s (query result %d)\n",
                 cudaGetErrorString(status), static_cast<int>(query));
    return false;
  }
  const auto encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(entry);
  const cuuint64_t globalDim[2] = {cols, rows};                       // innermost first
  const cuuint64_t globalStride[1] = {cols * sizeof(std::uint16_t)};  // bytes, dims 1..
  const cuuint32_t boxDim[2] = {boxCols, boxRows};
  const cuuint32_t elementStride[2] = {1, 1};
  const CUresult result = encode(
      map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, const_cast<void*>(data), globalDim, globalStride,
      boxDim, elementStride, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled failed with CUresult %d\n",
                 static_cast<int>(result));
    return false;
  }
  return true;
}

}  // namespace example

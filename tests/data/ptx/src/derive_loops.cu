// Fixture for the derived-region tests (src/ptx/derive_test.cpp), written for Argus: nested
// loops (the inner one unrolled by 4 with a remainder), a loop entered by a branch, a call of a
// __noinline__ helper, a __syncthreads() and global loads and stores. No markers.
__device__ __noinline__ float scale(float v, int k) {
  for (int i = 0; i < k; ++i) v = v * 0.5f + 1.0f;
  return v;
}

__global__ void nested(float* y, const float* x, float a, int n, int reps) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.f;
  for (int r = 0; r < reps; ++r) {
    for (int k = i; k < n; k += 4096) {
      acc += a * x[k];
    }
    __syncthreads();
  }
  if (i < n) y[i] = scale(acc, reps);
}

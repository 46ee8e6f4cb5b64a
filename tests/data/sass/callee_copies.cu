// Fixture of src/sass/callee_copies_test.cpp (issue 31): non-inlined callees that ptxas would
// specialize per caller if each caller had a clone of its own.
//   trips:  `helper` called with trip count 8 from one region and 3 from another, so that its
//           unrolled-by-4 loop and remainder run different PCs per caller.
//   nested: `outer` calls `inner`, and the kernel calls `outer` from two places, so that a copy
//           of `outer` holds a call of its own.
// Made with: nvcc -arch=sm_90a -ptx -O3 callee_copies.cu -o callee_copies.ptx (CUDA 13.0);
// the test assembles it with ptxas -arch=sm_90a.
__device__ __noinline__ float helper(float x, int trips) {
  float acc = x;
  for (int i = 0; i < trips; ++i) acc = acc * 1.0001f + x;
  return acc;
}

extern "C" __global__ void trips(const float* x, float* y) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const float v = x[i];
  float acc = helper(v, 8);
  acc += helper(acc, 3);
  y[i] = acc;
}

__device__ __noinline__ float inner(float x, int n) {
  float acc = x;
  for (int i = 0; i < n; ++i) acc = acc * x + 1.0f;
  return acc;
}

__device__ __noinline__ float outer(float x, int n) { return inner(x, n) * 2.0f + x; }

extern "C" __global__ void nested(const float* x, float* y, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const float v = x[i];
  float acc = outer(v, n);
  acc += outer(acc, n + 1);
  y[i] = acc;
}

// Correct: __host__ __device__ helpers call math functions on floats. The
// host pass may resolve them to a double function where the device pass, the
// one that runs on the GPU, takes the float overload: fabs on float2 members
// in a helper header that includes <math.h> only outside nvcc, and exp10/j0,
// whose float overloads clang declares for the device only.
#include <cuda_runtime.h>

inline __host__ __device__ float2 fabs(float2 v) {
  return make_float2(fabs(v.x), fabs(v.y));
}

inline __host__ __device__ float attenuate(float x) {
  return exp10(-x) * j0(x);
}

__global__ void absolute(float2* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = fabs(data[i]);
  if (i < n) data[i].x = attenuate(data[i].y);
}

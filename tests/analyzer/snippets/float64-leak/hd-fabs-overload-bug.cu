// Buggy twin of hd-fabs-overload.cu: the __host__ __device__ helper calls a
// function that has only a double version, so the device pass computes in
// double too.
#include <cuda_runtime.h>

__host__ __device__ double soft_clip(double x) { return x / (1.0 + (x < 0 ? -x : x)); }

inline __host__ __device__ float2 clip(float2 v) {
  return make_float2(soft_clip(v.x), soft_clip(v.y));  // CHECK: GD002, GD002
}

__global__ void clip_all(float2* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = clip(data[i]);
}

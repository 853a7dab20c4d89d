// Code written for nvcc's host view: it parses with no error, and nothing here
// is a finding. Each use below was a parse error before compat/nvcc_host_view.h.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void scale_streaming(const float4* in, float4* out, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float4 v = __ldcs(in + i);  // cache-hint load (sm_32_intrinsics.h)
  v.x *= factor;
  __stcs(out + i, v);  // cache-hint store
  __stcg(out + i, __ldcg(in + i));
}

__global__ void fill_surface(cudaSurfaceObject_t surface, int width) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x < width) surf2Dwrite(1.0f, surface, x * 4, 0);  // surface_indirect_functions.h
}

int grid_for(int n, int block) {
  return max(1, min(n / block, 1024));  // host min/max (crt/math_functions.hpp)
}

bool all_finite(const float* values, int n) {
  for (int i = 0; i < n; ++i)
    if (!isfinite(values[i])) return false;  // <math.h>, which nvcc includes
  return true;
}

double seconds_since(clock_t start) {
  return double(clock() - start) / CLOCKS_PER_SEC;  // <time.h>, which nvcc includes
}

int prefer_host(void* managed, size_t bytes) {
  // CUDA 12's signature (an int device); CUDA 13 takes a cudaMemLocation.
  if (cudaMemAdvise(managed, bytes, cudaMemAdviseSetPreferredLocation, cudaCpuDeviceId) != cudaSuccess) return 1;
  return 0;
}

#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

__global__ void fill(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 0.0f;
}

void never_freed(int n) {
  float* scratch = nullptr;
  CHECK(cudaMalloc(&scratch, n * sizeof(float)));  // CHECK: GD007
  fill<<<1, 256>>>(scratch, n);
  CHECK(cudaGetLastError());
}

bool early_return_leaks(int n, bool skip) {
  float* scratch = nullptr;
  CHECK(cudaMalloc(&scratch, n * sizeof(float)));  // CHECK: GD007
  if (skip) return false;
  fill<<<1, 256>>>(scratch, n);
  CHECK(cudaGetLastError());
  CHECK(cudaFree(scratch));
  return true;
}

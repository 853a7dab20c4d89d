#include <cuda_runtime.h>

__global__ void fill(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 1.0f;
}

void ignores_everything(int n) {
  float* d = nullptr;
  cudaMalloc(&d, n * sizeof(float));  // CHECK: GD006
  fill<<<1, 256>>>(d, n);  // CHECK: GD006
  cudaDeviceSynchronize();  // CHECK: GD006
  cudaFree(d);  // CHECK: GD006
}

// A macro that does not look at the status is no check.
#define TRY(call) call
void macro_that_discards(float* d) {
  TRY(cudaMemset(d, 0, 16));  // CHECK: GD006
}

#include <cuda_runtime.h>
#include <cstdlib>

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

// A checked synchronisation or blocking copy reports a fault inside the
// kernel, but a launch that never started leaves its error only in the last
// error, which nothing reads here.
void checked_only_by_synchronisation(float* d, float* host, int n) {
  fill<<<1, 4096>>>(d, n);  // CHECK: GD006
  if (cudaDeviceSynchronize() != cudaSuccess) std::abort();
  fill<<<1, 256>>>(d, n);  // CHECK: GD006
  if (cudaMemcpy(host, d, n * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) std::abort();
}

// `cudaGetLastError();` as a statement clears the error without reading it.
void clears_unread(float* d, int n) {
  fill<<<1, 256>>>(d, n);  // CHECK: GD006
  cudaGetLastError();
}

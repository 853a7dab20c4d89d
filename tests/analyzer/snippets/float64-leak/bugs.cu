#include <cuda_runtime.h>
#include <cmath>
#include <cstdlib>
#include <vector>

__global__ void scale_by_half(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5;  // CHECK: GD002
}

__global__ void softplus(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = log(1.0f + exp((double)x[i]));  // CHECK: GD002, GD002
}

__device__ float accumulate(const float* x, int n) {
  double total = 0;  // CHECK: GD002
  for (int i = 0; i < n; ++i) total += x[i];
  return static_cast<float>(total);
}

void upload(float* device, int n) {
  std::vector<double> host(n, 1.0);
  if (cudaMemcpy(device, host.data(), n * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess)  // CHECK: GD002
    abort();
}

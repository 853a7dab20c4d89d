// A tiny CUDA program for the end-to-end CUPTI test: allocates, copies both
// ways (one pageable async copy), sets, launches a kernel, synchronises, frees.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

__global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

int main() {
  const int n = 1 << 16;
  std::vector<float> host(n, 1.0f);
  float* dev = nullptr;
  if (cudaMalloc(&dev, n * sizeof(float)) != cudaSuccess) return 1;
  cudaMemset(dev, 0, n * sizeof(float));
  cudaMemcpy(dev, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  scale<<<(n + 255) / 256, 256>>>(dev, 2.0f, n);
  cudaMemcpyAsync(host.data(), dev, n * sizeof(float), cudaMemcpyDeviceToHost, 0);
  cudaStreamSynchronize(0);
  cudaFree(dev);
  std::printf("%f\n", host[0]);
  return host[0] == 2.0f ? 0 : 3;
}

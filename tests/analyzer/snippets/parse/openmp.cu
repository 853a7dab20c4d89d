// RUN-FLAGS: -std=c++17 -Xcompiler=-fopenmp
// A CUDA file that fills its host buffers with OpenMP, as llm.c's matmul
// kernels do: <omp.h> is found (clang's own, from libomp-19-dev, since a
// host compiler's header folder is not clang's) and the file is analysed.
#include <cuda_runtime.h>
#include <omp.h>

#include <cstdio>
#include <vector>

__global__ void scale(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}

int main() {
  const int n = 1 << 20;
  std::vector<float> host(n);
#pragma omp parallel for
  for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i) / omp_get_num_threads();
  float* d = nullptr;
  if (cudaMalloc(&d, n * sizeof(float)) != cudaSuccess) return 1;
  cudaMemcpy(d, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);  // CHECK: GD006
  scale<<<(n + 255) / 256, 256>>>(d, n);
  if (cudaGetLastError() != cudaSuccess) return 1;
  if (cudaFree(d) != cudaSuccess) return 1;
  std::printf("%f\n", host[1]);
  return 0;
}

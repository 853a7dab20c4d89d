// The fixed twin of consistency-bug.cu: every launch reads the last error
// right after it, as the rest of the file does.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

#define CUDA_CHECK(call)                                                      \
  do {                                                                        \
    cudaError_t status_ = (call);                                             \
    if (status_ != cudaSuccess) {                                             \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(status_));   \
      std::exit(1);                                                           \
    }                                                                         \
  } while (0)

__global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

__global__ void shift(float* x, float b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += b;
}

void normalise(float* d, float* staging, int n, cudaStream_t stream) {
  const int blocks = (n + 255) / 256;
  scale<<<blocks, 256, 0, stream>>>(d, 0.5f, n);
  CUDA_CHECK(cudaGetLastError());
  shift<<<blocks, 256, 0, stream>>>(d, -1.0f, n);
  CUDA_CHECK(cudaGetLastError());
  for (int pass = 0; pass < 2; ++pass) {
    scale<<<blocks, 256, 0, stream>>>(d, 2.0f, n);
    CUDA_CHECK(cudaGetLastError());
  }
  shift<<<blocks, 256, 0, stream>>>(d, 1.0f, n);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaMemcpyAsync(staging, d, n * sizeof(float), cudaMemcpyDeviceToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

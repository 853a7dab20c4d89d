// Per-object buffers, driver-API handles and unevaluated operands: none of
// these is a premature free, a host access of device memory or a double free.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

struct Plan {
  float* host_sum;
  cudaStream_t stream;
};

float finish(Plan* plans, int count, int n) {
  float total = 0.0f;
  for (int i = 0; i < count; ++i) {
    CHECK(cudaStreamSynchronize(plans[i].stream));
    for (int j = 0; j < n; ++j) total += plans[i].host_sum[j];
    CHECK(cudaFreeHost(plans[i].host_sum));
  }
  return total;
}

struct Producer {
  CUdeviceptr planes[3];
};

void release(Producer* producer) {
  for (int i = 0; i < 3; ++i)
    if (cuMemFree(producer->planes[i]) != CUDA_SUCCESS) abort();
}

void sized_by_pointee(int n) {
  float* device = nullptr;
  CHECK(cudaMalloc(&device, n * sizeof *device));
  CHECK(cudaFree(device));
}

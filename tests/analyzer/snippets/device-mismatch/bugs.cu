#include <cuda_runtime.h>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

__global__ void add(float* out, const float* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] += a[i];
}

void host_pointer_to_kernel(float* device_out, int n) {
  float* host = static_cast<float*>(malloc(n * sizeof(float)));
  add<<<1, 256>>>(device_out, host, n);  // CHECK: GD001
  CHECK(cudaGetLastError());
  free(host);
}

void vector_to_kernel(float* device_out, int n) {
  std::vector<float> weights(n, 1.0f);
  add<<<1, 256>>>(device_out, weights.data(), n);  // CHECK: GD001
  CHECK(cudaGetLastError());
}

void swapped_copy(int n) {
  float* device = nullptr;
  CHECK(cudaMalloc(&device, n * sizeof(float)));
  std::vector<float> host(n);
  CHECK(cudaMemcpy(host.data(), device, n * sizeof(float), cudaMemcpyHostToDevice));  // CHECK: GD001, GD001
  CHECK(cudaFree(device));
}

float host_dereference(int n) {
  float* device = nullptr;
  CHECK(cudaMalloc(&device, n * sizeof(float)));
  float first = device[0];  // CHECK: GD001
  CHECK(cudaFree(device));
  return first;
}

void host_memset_of_device(int n) {
  float* device = nullptr;
  CHECK(cudaMalloc(&device, n * sizeof(float)));
  memset(device, 0, n * sizeof(float));  // CHECK: GD001
  CHECK(cudaFree(device));
}

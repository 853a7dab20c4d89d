#include <cuda_runtime.h>
#include <cstdlib>
#include <vector>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

__global__ void add(float* out, const float* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] += a[i];
}

void copy_then_launch(float* device_out, int n) {
  std::vector<float> host(n, 1.0f);
  float* device = nullptr;
  CHECK(cudaMalloc(&device, n * sizeof(float)));
  CHECK(cudaMemcpy(device, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  add<<<1, 256>>>(device_out, device, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(host.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(device));
}

// Tricky negatives: managed memory is valid on both sides; pinned mapped memory
// may be passed to kernels.
void managed_and_pinned(float* device_out, int n) {
  float* managed = nullptr;
  CHECK(cudaMallocManaged(&managed, n * sizeof(float)));
  managed[0] = 1.0f;
  add<<<1, 256>>>(device_out, managed, n);
  CHECK(cudaGetLastError());
  float* pinned = nullptr;
  CHECK(cudaHostAlloc(&pinned, n * sizeof(float), cudaHostAllocMapped));
  add<<<1, 256>>>(device_out, pinned, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaFree(managed));
}

// The pointer is reassigned from unknown code: no claim is made about it.
float* lookup(int);
void unknown_origin(float* device_out, int n) {
  float* maybe = static_cast<float*>(malloc(16));
  free(maybe);
  maybe = lookup(n);
  add<<<1, 256>>>(device_out, maybe, n);
  CHECK(cudaGetLastError());
}

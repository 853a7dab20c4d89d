// Premature frees: stream-ordered free on another stream, use after free,
// double free, and a host buffer freed under a pending async copy.
#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

__global__ void scale(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}

void free_on_other_stream(int n) {
  cudaStream_t compute, cleanup;
  CHECK(cudaStreamCreate(&compute));
  CHECK(cudaStreamCreate(&cleanup));
  float* d = nullptr;
  CHECK(cudaMallocAsync(&d, n * sizeof(float), compute));
  scale<<<(n + 255) / 256, 256, 0, compute>>>(d, n);
  CHECK(cudaGetLastError());
  CHECK(cudaFreeAsync(d, cleanup));  // CHECK: GD004
  CHECK(cudaStreamSynchronize(cleanup));
}

void use_after_free(int n) {
  float* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  CHECK(cudaFree(d));
  scale<<<1, 256>>>(d, n);  // CHECK: GD004
  CHECK(cudaGetLastError());
}

void double_free(int n) {
  float* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  CHECK(cudaFree(d));
  CHECK(cudaFree(d));  // CHECK: GD004
}

// `host` comes from the caller (pinned there): the copy is truly asynchronous.
void host_buffer_freed_early(float* device, float* host, int n, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  delete[] host;  // CHECK: GD004
}

void freed_on_one_branch(bool early, int n) {
  float* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  if (early) CHECK(cudaFree(d));
  scale<<<1, 256>>>(d, n);  // CHECK: GD004
  CHECK(cudaGetLastError());
  if (!early) CHECK(cudaFree(d));  // not a double free: the branches exclude each other
}

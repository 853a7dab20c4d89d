#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

float read_without_sync(const float* device, int n, cudaStream_t stream) {
  float* host = nullptr;
  CHECK(cudaMallocHost(&host, n * sizeof(float)));
  CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  float first = host[0];  // CHECK: GD003
  CHECK(cudaFreeHost(host));
  return first;
}

// Synchronising another stream does not cover the copy.
float sync_of_other_stream(const float* device, int n, cudaStream_t copy_stream, cudaStream_t other) {
  float* host = nullptr;
  CHECK(cudaMallocHost(&host, n * sizeof(float)));
  CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, copy_stream));
  CHECK(cudaStreamSynchronize(other));
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += host[i];  // CHECK: GD003
  CHECK(cudaFreeHost(host));
  return sum;
}

void print_before_sync(const float* device, float* pinned, int n, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  std::printf("%f\n", pinned[n - 1]);  // CHECK: GD003
  CHECK(cudaStreamSynchronize(stream));
}

// Synchronised on one branch only.
float synced_on_one_path(const float* device, float* pinned, int n, cudaStream_t stream, bool wait) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  if (wait) CHECK(cudaStreamSynchronize(stream));
  return *pinned;  // CHECK: GD003
}

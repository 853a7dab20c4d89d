#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

__global__ void scale(float* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= 2.0f;
}

// The legacy default stream does not wait for a non-blocking stream, so the
// kernel on it may still use the buffer freed on the default stream.
void free_after_legacy_sync(int n) {
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float* data = nullptr;
  CHECK(cudaMallocAsync(&data, n * sizeof(float), stream));
  scale<<<(n + 255) / 256, 256, 0, stream>>>(data, n);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(0));
  CHECK(cudaFreeAsync(data, 0));  // CHECK: GD004
  CHECK(cudaStreamDestroy(stream));
}

// Fixed: synchronising the stream that uses it first.
void free_after_stream_sync(int n) {
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float* data = nullptr;
  CHECK(cudaMallocAsync(&data, n * sizeof(float), stream));
  scale<<<(n + 255) / 256, 256, 0, stream>>>(data, n);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFreeAsync(data, 0));
  CHECK(cudaStreamDestroy(stream));
}

// Tricky negative: with a blocking stream the legacy sync does cover the kernel.
void blocking_stream_free_after_legacy_sync(int n) {
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  float* data = nullptr;
  CHECK(cudaMallocAsync(&data, n * sizeof(float), stream));
  scale<<<(n + 255) / 256, 256, 0, stream>>>(data, n);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(0));
  CHECK(cudaFreeAsync(data, 0));
  CHECK(cudaStreamDestroy(stream));
}

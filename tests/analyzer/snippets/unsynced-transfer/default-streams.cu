// The special stream handles without per-thread default streams: 0 and
// cudaStreamLegacy are the legacy default stream, which waits for every
// blocking stream; cudaStreamPerThread is an ordinary blocking stream.
#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

float per_thread_handle_sync_misses_stream(const float* device, float* pinned, int n, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(cudaStreamPerThread));
  return pinned[0];  // CHECK: GD003
}

float legacy_handle_misses_nonblocking(const float* device, float* pinned, int n) {
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  return pinned[0];  // CHECK: GD003
}

// Fixed: cudaStreamLegacy is stream 0 here and covers the blocking stream.
float legacy_handle_covers_stream(const float* device, float* pinned, int n, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  return pinned[0];
}

// Fixed: the per-thread stream is blocking, so the legacy stream waits for it.
float legacy_sync_covers_per_thread_stream(const float* device, float* pinned, int n) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, cudaStreamPerThread));
  CHECK(cudaStreamSynchronize(0));
  return pinned[0];
}

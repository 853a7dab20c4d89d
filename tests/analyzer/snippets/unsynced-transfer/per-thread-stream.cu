// RUN-FLAGS: --default-stream per-thread
// Compiled with per-thread default streams: stream 0 is this thread's own
// stream, which waits for no other stream, so a sync of it (or a blocking
// copy on it) covers only its own work.
#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

float default_stream_sync_misses_stream(const float* device, int n) {
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  float* host = nullptr;
  CHECK(cudaMallocHost(&host, n * sizeof(float)));
  CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(0));
  const float first = host[0];  // CHECK: GD003
  CHECK(cudaFreeHost(host));
  return first;
}

float blocking_copy_misses_stream(const float* device, float* pinned, int n, cudaStream_t stream) {
  float scalar = 0.0f;
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaMemcpy(&scalar, device, sizeof(float), cudaMemcpyDeviceToHost));
  return scalar + pinned[0];  // CHECK: GD003
}

float default_stream_event_misses_stream(const float* device, float* pinned, int n, cudaStream_t stream) {
  cudaEvent_t done;
  CHECK(cudaEventCreate(&done));
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaEventRecord(done, 0));
  CHECK(cudaEventSynchronize(done));
  return pinned[0];  // CHECK: GD003
}

// Fixed: the copy is on the per-thread stream itself.
float copy_and_sync_on_default_stream(const float* device, float* pinned, int n) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaStreamSynchronize(0));
  return pinned[0];
}

// Fixed: cudaStreamPerThread is the same stream as 0 here.
float per_thread_handle_is_stream_zero(const float* device, float* pinned, int n) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, cudaStreamPerThread));
  CHECK(cudaStreamSynchronize(0));
  return pinned[0];
}

// Fixed: the legacy default stream still waits for every blocking stream.
float legacy_handle_covers_blocking_stream(const float* device, float* pinned, int n, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  return pinned[0];
}

// Fixed: a sync of the copy's own stream.
float stream_sync(const float* device, float* pinned, int n, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  return pinned[0];
}

// RUN-FLAGS: --default-stream per-thread
// Kernel writers with per-thread default streams: a launch without a stream
// goes to the thread's own stream, which a sync of stream 0 (or a blocking
// copy) covers; a launch on another stream it does not cover.
#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

__global__ void fill(float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 1.0f;
}

float* managed_buffer(int n) {
  float* buffer = nullptr;
  CHECK(cudaMallocManaged(&buffer, n * sizeof(float)));
  return buffer;
}

float default_stream_sync_misses_stream(int n, cudaStream_t stream) {
  float* result = managed_buffer(n);
  fill<<<(n + 255) / 256, 256, 0, stream>>>(result, n);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(0));
  const float first = result[0];  // CHECK: GD003
  CHECK(cudaFree(result));
  return first;
}

float blocking_copy_misses_stream(const float* device, int n, cudaStream_t stream) {
  float* result = managed_buffer(n);
  float scale = 0.0f;
  fill<<<(n + 255) / 256, 256, 0, stream>>>(result, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(&scale, device, sizeof(float), cudaMemcpyDeviceToHost));
  const float first = scale * result[0];  // CHECK: GD003
  CHECK(cudaFree(result));
  return first;
}

// Fixed: the legacy default stream waits for every blocking stream, the
// thread's own included.
float legacy_handle_covers_default_launch(int n) {
  float* result = managed_buffer(n);
  fill<<<(n + 255) / 256, 256>>>(result, n);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  const float first = result[0];
  CHECK(cudaFree(result));
  return first;
}

// Fixed: the launch and the sync are on the thread's default stream.
float launch_and_sync_on_default_stream(int n) {
  float* result = managed_buffer(n);
  fill<<<(n + 255) / 256, 256>>>(result, n);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(0));
  const float first = result[0];
  CHECK(cudaFree(result));
  return first;
}

// Fixed: cudaStreamPerThread is stream 0 here.
float per_thread_handle_is_stream_zero(int n) {
  float* result = managed_buffer(n);
  fill<<<(n + 255) / 256, 256, 0, cudaStreamPerThread>>>(result, n);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(0));
  const float first = result[0];
  CHECK(cudaFree(result));
  return first;
}

// Fixed: a blocking copy runs on the thread's stream, after its launch.
float blocking_copy_after_default_launch(const float* device, int n) {
  float* result = managed_buffer(n);
  float scale = 0.0f;
  fill<<<(n + 255) / 256, 256>>>(result, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(&scale, device, sizeof(float), cudaMemcpyDeviceToHost));
  const float first = scale * result[0];
  CHECK(cudaFree(result));
  return first;
}

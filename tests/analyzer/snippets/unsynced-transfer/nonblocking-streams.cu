#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

// A stream created with cudaStreamNonBlocking does not synchronise with the
// legacy default stream: syncing the default stream leaves its copy running.
float legacy_sync_misses_nonblocking(const float* device, int n) {
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float* host = nullptr;
  CHECK(cudaMallocHost(&host, n * sizeof(float)));
  CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(0));
  const float first = host[0];  // CHECK: GD003
  CHECK(cudaFreeHost(host));
  CHECK(cudaStreamDestroy(stream));
  return first;
}

// A blocking cudaMemcpy runs on the legacy default stream too.
float blocking_copy_misses_nonblocking(const float* device, float* scratch, int n) {
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, 0));
  float* host = nullptr;
  CHECK(cudaMallocHost(&host, n * sizeof(float)));
  CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaMemcpy(scratch, device, sizeof(float), cudaMemcpyDeviceToHost));
  const float first = host[0];  // CHECK: GD003
  CHECK(cudaFreeHost(host));
  return first;
}

// An event recorded on the legacy default stream does not cover it either.
float default_stream_event_misses_nonblocking(const float* device, int n) {
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t done;
  CHECK(cudaEventCreate(&done));
  float* host = nullptr;
  CHECK(cudaMallocHost(&host, n * sizeof(float)));
  CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaEventRecord(done, 0));
  CHECK(cudaEventSynchronize(done));
  const float first = host[0];  // CHECK: GD003
  CHECK(cudaFreeHost(host));
  return first;
}

// Fixed: cudaDeviceSynchronize waits for every stream, non-blocking or not.
float device_sync_covers_nonblocking(const float* device, int n) {
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float* host = nullptr;
  CHECK(cudaMallocHost(&host, n * sizeof(float)));
  CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaDeviceSynchronize());
  const float first = host[0];
  CHECK(cudaFreeHost(host));
  return first;
}

// Fixed: a sync of the stream itself.
float stream_sync_covers_nonblocking(const float* device, int n) {
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float* host = nullptr;
  CHECK(cudaMallocHost(&host, n * sizeof(float)));
  CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  const float first = host[0];
  CHECK(cudaFreeHost(host));
  return first;
}

// Tricky negative: cudaStreamDefault flags make a blocking stream, which the
// legacy default stream does wait for.
float legacy_sync_covers_blocking(const float* device, int n) {
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamDefault));
  float* host = nullptr;
  CHECK(cudaMallocHost(&host, n * sizeof(float)));
  CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(0));
  const float first = host[0];
  CHECK(cudaFreeHost(host));
  return first;
}

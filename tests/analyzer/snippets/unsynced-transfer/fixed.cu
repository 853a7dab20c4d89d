#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

float read_after_stream_sync(const float* device, float* pinned, int n, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  return pinned[0];
}

// Tricky negative: an event recorded after the copy, then synchronised.
float read_after_event(const float* device, float* pinned, int n, cudaStream_t stream) {
  cudaEvent_t copied;
  CHECK(cudaEventCreate(&copied));
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaEventRecord(copied, stream));
  CHECK(cudaEventSynchronize(copied));
  return pinned[0];
}

// A helper that synchronises the device counts as a sync.
static void wait_for_gpu() { CHECK(cudaDeviceSynchronize()); }

float read_after_helper(const float* device, float* pinned, int n, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  wait_for_gpu();
  return pinned[0];
}

// Host-to-device copies leave nothing for the host to wait for before reading.
float host_to_device(float* device, float* pinned, int n, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(device, pinned, n * sizeof(float), cudaMemcpyHostToDevice, stream));
  return pinned[0];
}

// Tricky negative: an event recorded on the legacy default stream covers the
// work of the (blocking) streams queued before it.
float read_after_default_stream_event(const float* device, float* pinned, int n, cudaStream_t* streams) {
  cudaEvent_t all_done;
  CHECK(cudaEventCreate(&all_done));
  for (int i = 0; i < 4; ++i)
    CHECK(cudaMemcpyAsync(pinned + i * n, device + i * n, n * sizeof(float), cudaMemcpyDeviceToHost, streams[i]));
  CHECK(cudaEventRecord(all_done, 0));
  CHECK(cudaEventSynchronize(all_done));
  return pinned[0];
}

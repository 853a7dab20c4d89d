// Blocking calls the code assumed would wait for the copy (CUDA docs, "API
// synchronization behavior"): cudaMemset and device-to-device cudaMemcpy do
// not make the host wait; a sync of one stream does not cover another; the
// legacy default stream does not wait for non-blocking streams.
#include <cuda_runtime.h>
#include <cstdlib>
#include <vector>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

static cudaStream_t g_copies;

void make_streams() { CHECK(cudaStreamCreateWithFlags(&g_copies, cudaStreamNonBlocking)); }

static void wait_for(cudaStream_t stream) { CHECK(cudaStreamSynchronize(stream)); }

float memset_does_not_wait(const float* device, float* scratch, float* pinned, int n, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaMemset(scratch, 0, n * sizeof(float)));
  return pinned[0];  // CHECK: GD003
}

float device_to_device_copy_does_not_wait(const float* device, float* scratch, float* pinned, int n,
                                          cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaMemcpy(scratch, device, n * sizeof(float), cudaMemcpyDeviceToDevice));
  return pinned[0];  // CHECK: GD003
}

// The helper waits for the stream it is given, which is not the copy's.
float helper_waits_for_other_stream(const float* device, float* pinned, int n, cudaStream_t copies,
                                    cudaStream_t compute) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, copies));
  wait_for(compute);
  return pinned[0];  // CHECK: GD003
}

// The stream was made non-blocking elsewhere: a blocking copy on the legacy
// default stream does not wait for it.
float legacy_copy_misses_global_nonblocking(const float* device, float* pinned, int n) {
  float scalar = 0.0f;
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, g_copies));
  CHECK(cudaMemcpy(&scalar, device, sizeof(float), cudaMemcpyDeviceToHost));
  return scalar + pinned[0];  // CHECK: GD003
}

float legacy_sync_misses_global_nonblocking(const float* device, float* pinned, int n) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, g_copies));
  CHECK(cudaStreamSynchronize(0));
  return pinned[0];  // CHECK: GD003
}

// Fixed: the helper waits for the copy's stream.
float helper_waits_for_copy_stream(const float* device, float* pinned, int n, cudaStream_t copies) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, copies));
  wait_for(copies);
  return pinned[0];
}

// Fixed: a blocking device-to-host copy on the legacy default stream waits
// for the blocking stream first.
float blocking_copy_covers_blocking_stream(const float* device, float* pinned, int n, cudaStream_t stream) {
  float scalar = 0.0f;
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaMemcpy(&scalar, device, sizeof(float), cudaMemcpyDeviceToHost));
  return scalar + pinned[0];
}

// Fixed: cudaFree waits for the device before it releases.
float free_waits_for_device(const float* device, float* scratch, float* pinned, int n) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, g_copies));
  CHECK(cudaFree(scratch));
  return pinned[0];
}

// Fixed: an asynchronous copy into pageable memory returns only once it is
// done, after everything queued before it on the stream.
float pageable_copy_waits_for_stream(const float* device, float* pinned, int n, cudaStream_t stream) {
  std::vector<float> staging(n);
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaMemcpyAsync(staging.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));  // CHECK: GD009
  return pinned[0] + staging[0];
}

// Fixed: the legacy-stream sync covers a blocking stream.
float legacy_sync_covers_blocking_stream(const float* device, float* pinned, int n, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(0));
  return pinned[0];
}

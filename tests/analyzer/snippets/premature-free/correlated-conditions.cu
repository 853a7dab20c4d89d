// The upload is asynchronous only under a flag, and the stream is
// synchronised under the same flag before the host buffer is freed. Twins
// where the free can meet a pending copy are still GD004.
#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call)                               \
  do {                                            \
    if ((call) != cudaSuccess) std::abort();      \
  } while (0)

void upload_and_release(float* host, float* device, size_t n, bool async, cudaStream_t stream) {
  if (async) CHECK(cudaMemcpyAsync(device, host, n * sizeof(float), cudaMemcpyHostToDevice, stream));
  else CHECK(cudaMemcpy(device, host, n * sizeof(float), cudaMemcpyHostToDevice));
  if (async) CHECK(cudaStreamSynchronize(stream));
  free(host);
}

void sync_under_another_flag(float* host, float* device, size_t n, bool async, bool wait, cudaStream_t stream) {
  if (async) CHECK(cudaMemcpyAsync(device, host, n * sizeof(float), cudaMemcpyHostToDevice, stream));
  if (wait) CHECK(cudaStreamSynchronize(stream));
  free(host);  // CHECK: GD004
}

void sync_only_sometimes(float* host, float* device, size_t n, bool async, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(device, host, n * sizeof(float), cudaMemcpyHostToDevice, stream));
  if (async) CHECK(cudaStreamSynchronize(stream));
  free(host);  // CHECK: GD004
}

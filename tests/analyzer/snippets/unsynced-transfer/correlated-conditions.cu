// The copy is asynchronous only under a flag, and the stream is synchronised
// under the same flag before the host reads: the path that copied and
// skipped the sync cannot run. Twins where it can are still GD003.
#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call)                               \
  do {                                            \
    if ((call) != cudaSuccess) std::abort();      \
  } while (0)

float fetch(float* host, const float* device, size_t n, bool async, cudaStream_t stream) {
  if (async) CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  else CHECK(cudaMemcpy(host, device, n * sizeof(float), cudaMemcpyDeviceToHost));
  if (async) CHECK(cudaStreamSynchronize(stream));
  return host[0];
}

float fetch_nested(float* host, const float* device, size_t n, bool copy, bool blocking, cudaStream_t stream) {
  if (copy) {
    if (!blocking) CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  }
  if (!blocking) {
    CHECK(cudaDeviceSynchronize());
  }
  return host[0];
}

// The flag is set once before the loop that copies and waits under it.
float flag_set_first(float* host, const float* device, size_t n, int mode, int rounds, cudaStream_t stream) {
  bool async = false;
  if (mode == 2) async = true;
  float sum = 0;
  for (int i = 0; i < rounds; ++i) {
    if (async) CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
    else CHECK(cudaMemcpy(host, device, n * sizeof(float), cudaMemcpyDeviceToHost));
    if (async) CHECK(cudaStreamSynchronize(stream));
    sum += host[0];
  }
  return sum;
}

// The flag changes between the copy and the sync.
float flag_changes(float* host, const float* device, size_t n, bool async, cudaStream_t stream) {
  if (async) CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  async = n > 4;
  if (async) CHECK(cudaStreamSynchronize(stream));
  return host[0];  // CHECK: GD003
}

// The sync is under another flag.
float other_flag(float* host, const float* device, size_t n, bool async, bool wait, cudaStream_t stream) {
  if (async) CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  if (wait) CHECK(cudaStreamSynchronize(stream));
  return host[0];  // CHECK: GD003
}

// Only the sync is conditional.
float sync_sometimes(float* host, const float* device, size_t n, bool async, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  if (async) CHECK(cudaStreamSynchronize(stream));
  return host[0];  // CHECK: GD003
}

// The sync is in a loop that may not run.
float sync_in_a_loop(float* host, const float* device, size_t n, bool async, int rounds, cudaStream_t stream) {
  if (async) CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  for (int i = 0; i < rounds; ++i)
    if (async) CHECK(cudaStreamSynchronize(stream));
  return host[0];  // CHECK: GD003
}

// One copy per stream, then a sync of each stream in a loop with the same
// header: the second loop runs whenever the first did.
float per_stream_loops(float* host, const float* device, size_t n, cudaStream_t* streams, int count) {
  for (int s = 0; s < count; ++s)
    CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, streams[s]));
  for (int s = 0; s < count; ++s) CHECK(cudaStreamSynchronize(streams[s]));
  return host[0];
}

// The sync loop stops one stream short.
float sync_loop_stops_short(float* host, const float* device, size_t n, cudaStream_t* streams, int count) {
  for (int s = 0; s < count; ++s)
    CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, streams[s]));
  for (int s = 0; s < count - 1; ++s) CHECK(cudaStreamSynchronize(streams[s]));
  return host[0];  // CHECK: GD003
}

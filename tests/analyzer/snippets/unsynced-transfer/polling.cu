// Polling a stream or an event instead of synchronising: a wait once the loop
// leaves on success; a query whose result nobody tests waits for nothing.
#include <cuda_runtime.h>
#include <cstdlib>
#include <thread>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

float query_result_ignored(const float* device, float* pinned, int n, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  (void)cudaStreamQuery(stream);
  return pinned[0];  // CHECK: GD003
}

float query_kept_but_not_tested(const float* device, float* pinned, int n, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  const cudaError_t status = cudaStreamQuery(stream);
  const float first = pinned[0];  // CHECK: GD003
  return status == cudaSuccess ? first : 0.0f;
}

float polls_the_wrong_stream(const float* device, float* pinned, int n, cudaStream_t copies, cudaStream_t compute) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, copies));
  while (cudaStreamQuery(compute) == cudaErrorNotReady) std::this_thread::yield();
  return pinned[0];  // CHECK: GD003
}

float polls_an_event_recorded_before(const float* device, float* pinned, int n, cudaStream_t stream) {
  cudaEvent_t mark;
  CHECK(cudaEventCreate(&mark));
  CHECK(cudaEventRecord(mark, stream));
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  while (cudaEventQuery(mark) != cudaSuccess) {
  }
  return pinned[0];  // CHECK: GD003
}

// The loop gives up after 100 polls, done or not.
float polling_gives_up(const float* device, float* pinned, int n, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  int tries = 0;
  while (cudaStreamQuery(stream) == cudaErrorNotReady && tries < 100) ++tries;
  return pinned[0];  // CHECK: GD003
}

// Fixed: after the polls that gave up, a wait.
float polls_then_waits(const float* device, float* pinned, int n, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  for (int tries = 0; tries < 100; ++tries)
    if (cudaStreamQuery(stream) == cudaSuccess) break;
  if (cudaStreamQuery(stream) != cudaSuccess) CHECK(cudaStreamSynchronize(stream));
  return pinned[0];
}

// Fixed: the loop leaves once the stream is done.
float polls_stream_until_done(const float* device, float* pinned, int n, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  while (cudaStreamQuery(stream) == cudaErrorNotReady) std::this_thread::yield();
  return pinned[0];
}

// Fixed: an event recorded after the copy, polled until it completes.
float polls_event_until_done(const float* device, float* pinned, int n, cudaStream_t stream) {
  cudaEvent_t copied;
  CHECK(cudaEventCreate(&copied));
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaEventRecord(copied, stream));
  while (cudaEventQuery(copied) != cudaSuccess) {
  }
  return pinned[0];
}

// Fixed: the status kept in a variable that the loop condition tests.
float polls_through_a_status(const float* device, float* pinned, int n, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  cudaError_t status;
  do {
    status = cudaStreamQuery(stream);
  } while (status == cudaErrorNotReady);
  return pinned[0];
}

// Fixed: read only on the branch where the query said the copy is done.
float reads_when_done(const float* device, float* pinned, int n, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  if (cudaStreamQuery(stream) == cudaSuccess) return pinned[0];
  CHECK(cudaStreamSynchronize(stream));
  return pinned[0];
}

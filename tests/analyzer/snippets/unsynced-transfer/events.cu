// The host waits on an event: it covers exactly the work queued on the
// event's stream before the event was recorded.
#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

// Recorded before the copy was queued: the event says nothing about the copy.
float event_recorded_before_copy(const float* device, float* pinned, int n, cudaStream_t stream) {
  cudaEvent_t ready;
  CHECK(cudaEventCreate(&ready));
  CHECK(cudaEventRecord(ready, stream));
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaEventSynchronize(ready));
  return pinned[0];  // CHECK: GD003
}

// Recorded after the copy, but on another stream.
float event_on_other_stream(const float* device, float* pinned, int n, cudaStream_t copies, cudaStream_t compute) {
  cudaEvent_t done;
  CHECK(cudaEventCreate(&done));
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, copies));
  CHECK(cudaEventRecord(done, compute));
  CHECK(cudaEventSynchronize(done));
  return pinned[0];  // CHECK: GD003
}

// The host waits on an event nobody recorded.
float event_never_recorded(const float* device, float* pinned, int n, cudaStream_t stream) {
  cudaEvent_t done;
  CHECK(cudaEventCreate(&done));
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaEventSynchronize(done));
  return pinned[0];  // CHECK: GD003
}

// Two events: the one recorded after the copy is not the one waited on.
float waits_on_the_wrong_event(const float* device, float* pinned, int n, cudaStream_t stream) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start, stream));
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaEventRecord(stop, stream));
  CHECK(cudaEventSynchronize(start));
  return pinned[0];  // CHECK: GD003
}

// cudaStreamWaitEvent orders the other stream after the copy; the host goes on.
float stream_wait_does_not_block_host(const float* device, float* pinned, int n, cudaStream_t copies,
                                      cudaStream_t compute) {
  cudaEvent_t done;
  CHECK(cudaEventCreate(&done));
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, copies));
  CHECK(cudaEventRecord(done, copies));
  CHECK(cudaStreamWaitEvent(compute, done, 0));
  return pinned[0];  // CHECK: GD003
}

// Fixed: recorded after the copy on the copy's stream, then waited on.
float event_after_copy(const float* device, float* pinned, int n, cudaStream_t stream) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start, stream));
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaEventRecord(stop, stream));
  CHECK(cudaEventSynchronize(stop));
  return pinned[0];
}

// Fixed: the other stream waits for the copy's event, and the host waits for
// an event recorded on that stream afterwards.
float event_chain_across_streams(const float* device, float* pinned, int n, cudaStream_t copies,
                                 cudaStream_t compute) {
  cudaEvent_t copied, computed;
  CHECK(cudaEventCreate(&copied));
  CHECK(cudaEventCreate(&computed));
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, copies));
  CHECK(cudaEventRecord(copied, copies));
  CHECK(cudaStreamWaitEvent(compute, copied, 0));
  CHECK(cudaEventRecord(computed, compute));
  CHECK(cudaEventSynchronize(computed));
  return pinned[0];
}

// Fixed: synchronising the stream that waited for the copy's event.
float sync_of_waiting_stream(const float* device, float* pinned, int n, cudaStream_t copies, cudaStream_t compute) {
  cudaEvent_t copied;
  CHECK(cudaEventCreate(&copied));
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, copies));
  CHECK(cudaEventRecord(copied, copies));
  CHECK(cudaStreamWaitEvent(compute, copied, 0));
  CHECK(cudaStreamSynchronize(compute));
  return pinned[0];
}

// Fixed: an event re-recorded after the copy covers it.
float event_recorded_again(const float* device, float* pinned, int n, cudaStream_t stream) {
  cudaEvent_t mark;
  CHECK(cudaEventCreate(&mark));
  CHECK(cudaEventRecord(mark, stream));
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaEventRecord(mark, stream));
  CHECK(cudaEventSynchronize(mark));
  return pinned[0];
}

// The corrected variants: all silent.
#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

__global__ void scale(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}

void free_on_same_stream(int n) {
  cudaStream_t compute;
  CHECK(cudaStreamCreate(&compute));
  float* d = nullptr;
  CHECK(cudaMallocAsync(&d, n * sizeof(float), compute));
  scale<<<(n + 255) / 256, 256, 0, compute>>>(d, n);
  CHECK(cudaGetLastError());
  CHECK(cudaFreeAsync(d, compute));
  CHECK(cudaStreamSynchronize(compute));
}

// Tricky negative: the cleanup stream waits on an event recorded after the kernel.
void free_after_event_wait(int n) {
  cudaStream_t compute, cleanup;
  cudaEvent_t done;
  CHECK(cudaStreamCreate(&compute));
  CHECK(cudaStreamCreate(&cleanup));
  CHECK(cudaEventCreate(&done));
  float* d = nullptr;
  CHECK(cudaMallocAsync(&d, n * sizeof(float), compute));
  scale<<<(n + 255) / 256, 256, 0, compute>>>(d, n);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(done, compute));
  CHECK(cudaStreamWaitEvent(cleanup, done, 0));
  CHECK(cudaFreeAsync(d, cleanup));
  CHECK(cudaStreamSynchronize(cleanup));
}

// Tricky negative: a full device sync before the other stream frees it.
void free_after_device_sync(int n, cudaStream_t a, cudaStream_t b) {
  float* d = nullptr;
  CHECK(cudaMallocAsync(&d, n * sizeof(float), a));
  scale<<<1, 256, 0, a>>>(d, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFreeAsync(d, b));
}

// Reallocated in a loop: each free belongs to its own allocation.
void realloc_in_loop(int n) {
  for (int step = 0; step < 4; ++step) {
    float* d = nullptr;
    CHECK(cudaMalloc(&d, n * sizeof(float)));
    scale<<<1, 256>>>(d, n);
    CHECK(cudaGetLastError());
    CHECK(cudaFree(d));
    d = nullptr;
  }
}

// Pinned host buffer freed after its stream was synchronised.
void host_buffer_after_sync(float* device, int n, cudaStream_t stream) {
  float* host = nullptr;
  CHECK(cudaHostAlloc(&host, n * sizeof(float), cudaHostAllocDefault));
  CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFreeHost(host));
}

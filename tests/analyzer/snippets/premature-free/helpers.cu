// Frees inside helpers shared across a code base (cuda_common.h-style
// utilities): what a helper frees and what it waits for is read from its body
// and applied where it is called.
#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)
#define SAFE_CUDA_FREE(p) do { if (p) CHECK(cudaFree(p)); } while (0)

__global__ void scale(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}

static cudaStream_t g_cleanup;

void free_buf(void* p) { CHECK(cudaFree(p)); }
void safe_free(float* p) { if (p) CHECK(cudaFree(p)); }
void release_async(float* p, cudaStream_t stream) { CHECK(cudaFreeAsync(p, stream)); }
void release_on_cleanup_stream(float* p) { CHECK(cudaFreeAsync(p, g_cleanup)); }
void release_host(float* p) { delete[] p; }
void maybe_free(float* p, bool owned) {
  if (owned) CHECK(cudaFree(p));
}
void wait_stream(cudaStream_t stream) { CHECK(cudaStreamSynchronize(stream)); }
void wait_then_release(float* p, cudaStream_t busy, cudaStream_t stream) {
  wait_stream(busy);
  release_async(p, stream);
}

void freed_on_other_stream_by_helper(int n, cudaStream_t compute, cudaStream_t cleanup) {
  float* d = nullptr;
  CHECK(cudaMallocAsync(&d, n * sizeof(float), compute));
  scale<<<(n + 255) / 256, 256, 0, compute>>>(d, n);
  CHECK(cudaGetLastError());
  release_async(d, cleanup);  // CHECK: GD004
}

void freed_on_helpers_own_stream(int n, cudaStream_t compute) {
  float* d = nullptr;
  CHECK(cudaMallocAsync(&d, n * sizeof(float), compute));
  scale<<<(n + 255) / 256, 256, 0, compute>>>(d, n);
  CHECK(cudaGetLastError());
  release_on_cleanup_stream(d);  // CHECK: GD004
}

// The helper waits, but for the wrong stream.
void helper_waits_for_wrong_stream(int n, cudaStream_t compute, cudaStream_t other) {
  float* d = nullptr;
  CHECK(cudaMallocAsync(&d, n * sizeof(float), compute));
  scale<<<(n + 255) / 256, 256, 0, compute>>>(d, n);
  CHECK(cudaGetLastError());
  wait_stream(other);
  release_on_cleanup_stream(d);  // CHECK: GD004
}

void used_after_helper_free(int n) {
  float* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  free_buf(d);
  scale<<<1, 256>>>(d, n);  // CHECK: GD004
  CHECK(cudaGetLastError());
}

void freed_by_helper_then_again(int n) {
  float* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  safe_free(d);
  CHECK(cudaFree(d));  // CHECK: GD004
}

void used_after_macro_free(int n) {
  float* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  SAFE_CUDA_FREE(d);
  scale<<<1, 256>>>(d, n);  // CHECK: GD004
  CHECK(cudaGetLastError());
}

// `host` comes from the caller (pinned there): the copy is truly asynchronous.
void host_buffer_released_by_helper(const float* device, float* host, int n, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  release_host(host);  // CHECK: GD004
}

// Fixed: freed on the stream that uses it.
void freed_on_same_stream_by_helper(int n, cudaStream_t compute) {
  float* d = nullptr;
  CHECK(cudaMallocAsync(&d, n * sizeof(float), compute));
  scale<<<(n + 255) / 256, 256, 0, compute>>>(d, n);
  CHECK(cudaGetLastError());
  release_async(d, compute);
}

// Fixed: a helper waits for the stream that uses it first.
void helper_waits_first(int n, cudaStream_t compute) {
  float* d = nullptr;
  CHECK(cudaMallocAsync(&d, n * sizeof(float), compute));
  scale<<<(n + 255) / 256, 256, 0, compute>>>(d, n);
  CHECK(cudaGetLastError());
  wait_stream(compute);
  release_on_cleanup_stream(d);
}

// Fixed: the helper itself waits for the busy stream before freeing.
void helper_waits_inside(int n, cudaStream_t compute, cudaStream_t cleanup) {
  float* d = nullptr;
  CHECK(cudaMallocAsync(&d, n * sizeof(float), compute));
  scale<<<(n + 255) / 256, 256, 0, compute>>>(d, n);
  CHECK(cudaGetLastError());
  wait_then_release(d, compute, cleanup);
}

// Fixed: cudaFree in a helper waits for the device before it releases.
void blocking_free_in_helper(int n, cudaStream_t compute) {
  float* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  scale<<<(n + 255) / 256, 256, 0, compute>>>(d, n);
  CHECK(cudaGetLastError());
  free_buf(d);
}

// Tricky negative: the helper frees only when told it owns the buffer.
void conditional_helper_free(int n, bool owned) {
  float* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  maybe_free(d, false);
  scale<<<1, 256>>>(d, n);
  CHECK(cudaGetLastError());
  maybe_free(d, owned);
}

// Fixed: the host buffer is released after the copy's stream was synchronised.
void host_buffer_released_after_sync(const float* device, float* host, int n, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(host, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  wait_stream(stream);
  release_host(host);
}

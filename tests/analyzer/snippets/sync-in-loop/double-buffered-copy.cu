// Correct: chunked transfers between a file and the GPU through two pinned
// staging buffers. The stream sync in each iteration is what lets the host
// write out (or refill) one buffer while the copy uses the other; it cannot
// be hoisted out of the loop.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <utility>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

void dump(FILE* out, const char* device_src, size_t bytes, size_t chunk, cudaStream_t stream) {
  char* staging = nullptr;
  CHECK(cudaMallocHost(&staging, 2 * chunk));
  char* filling = staging;
  char* draining = staging + chunk;
  size_t first = bytes < chunk ? bytes : chunk;
  CHECK(cudaMemcpyAsync(filling, device_src, first, cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  size_t left = bytes - first, ready = first;
  device_src += first;
  std::swap(filling, draining);
  while (left > 0) {
    size_t next = left < chunk ? left : chunk;
    CHECK(cudaMemcpyAsync(filling, device_src, next, cudaMemcpyDeviceToHost, stream));
    fwrite(draining, 1, ready, out);
    CHECK(cudaStreamSynchronize(stream));
    std::swap(filling, draining);
    left -= next;
    ready = next;
    device_src += next;
  }
  fwrite(draining, 1, ready, out);
  CHECK(cudaFreeHost(staging));
}

void load(char* device_dst, FILE* in, size_t bytes, size_t chunk, cudaStream_t stream) {
  char* staging = nullptr;
  CHECK(cudaMallocHost(&staging, 2 * chunk));
  char* reading = staging;
  char* sending = staging + chunk;
  size_t ready = fread(reading, 1, bytes < chunk ? bytes : chunk, in);
  size_t left = bytes - ready;
  std::swap(reading, sending);
  while (left > 0) {
    CHECK(cudaMemcpyAsync(device_dst, sending, ready, cudaMemcpyHostToDevice, stream));
    device_dst += ready;
    size_t next = fread(reading, 1, left < chunk ? left : chunk, in);
    CHECK(cudaStreamSynchronize(stream));
    std::swap(reading, sending);
    left -= next;
    ready = next;
  }
  CHECK(cudaMemcpyAsync(device_dst, sending, ready, cudaMemcpyHostToDevice, stream));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFreeHost(staging));
}

// A step's loss copied into pinned memory and read by the host each step:
// the sync is what makes the read safe.
__global__ void step(float* w, float* loss, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) w[i] -= 0.01f * w[i];
  if (i == 0) *loss = w[0];
}

float train(float* w, float* d_loss, int n, int steps, cudaStream_t stream) {
  float* h_loss = nullptr;
  CHECK(cudaMallocHost(&h_loss, sizeof(float)));
  float total = 0.0f;
  for (int s = 0; s < steps; ++s) {
    step<<<(n + 255) / 256, 256, 0, stream>>>(w, d_loss, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(h_loss, d_loss, sizeof(float), cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    total += *h_loss;
  }
  CHECK(cudaFreeHost(h_loss));
  return total;
}

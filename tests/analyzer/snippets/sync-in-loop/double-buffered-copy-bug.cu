// Buggy twins of double-buffered-copy.cu: the async copies' host buffers are
// read only after the loop, so syncing every iteration only drains the
// pipeline.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

__global__ void step(float* w, float* loss, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) w[i] -= 0.01f * w[i];
  if (i == 0) *loss = w[0];
}

void train(float* w, float* d_loss, int n, int steps, cudaStream_t stream) {
  float* h_losses = nullptr;
  CHECK(cudaMallocHost(&h_losses, steps * sizeof(float)));
  for (int s = 0; s < steps; ++s) {
    step<<<(n + 255) / 256, 256, 0, stream>>>(w, d_loss, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(&h_losses[s], d_loss, sizeof(float), cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));  // CHECK: GD010
  }
  for (int s = 0; s < steps; ++s) std::printf("%f\n", h_losses[s]);
  CHECK(cudaFreeHost(h_losses));
}

void upload_all(char* device_dst, FILE* in, size_t bytes, size_t chunk, cudaStream_t stream) {
  char* pinned = nullptr;
  CHECK(cudaMallocHost(&pinned, bytes));
  if (fread(pinned, 1, bytes, in) != bytes) abort();
  for (size_t done = 0; done < bytes; done += chunk) {
    CHECK(cudaMemcpyAsync(device_dst + done, pinned + done, chunk, cudaMemcpyHostToDevice, stream));
    CHECK(cudaStreamSynchronize(stream));  // CHECK: GD010
  }
  CHECK(cudaFreeHost(pinned));
}

#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

__global__ void step(float* w, float* loss, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) w[i] -= 0.01f * w[i];
  if (i == 0) *loss = w[0];
}

void train(float* w, float* loss, int n, int steps) {
  float host_loss = 0.0f;
  for (int s = 0; s < steps; ++s) {
    step<<<(n + 255) / 256, 256>>>(w, loss, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());  // CHECK: GD010
  }
  for (int s = 0; s < steps; ++s) {
    step<<<(n + 255) / 256, 256>>>(w, loss, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(&host_loss, loss, sizeof(float), cudaMemcpyDeviceToHost));  // CHECK: GD010
  }
}

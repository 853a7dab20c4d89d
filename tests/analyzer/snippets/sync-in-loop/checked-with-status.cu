// The CHECK macro of most CUDA code keeps the status in a variable; the sync
// is then the initialiser of a declaration. Whether it runs every iteration
// is still decided by the statements around that declaration.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

#define CUDA_CHECK(call)                                                   \
  do {                                                                     \
    cudaError_t status_ = (call);                                          \
    if (status_ != cudaSuccess) {                                          \
      std::fprintf(stderr, "%s\n", cudaGetErrorString(status_));           \
      std::exit(1);                                                        \
    }                                                                      \
  } while (0)

__global__ void step(float* w, float* loss, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) w[i] -= 0.01f * w[i];
  if (i == 0) *loss = w[0];
}

void train(float* w, float* loss, int n, int steps) {
  float host_loss = 0.0f;
  for (int s = 0; s < steps; ++s) {
    step<<<(n + 255) / 256, 256>>>(w, loss, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());  // CHECK: GD010
    if (s % 100 == 0) {  // every 100 steps: the fix
      CUDA_CHECK(cudaMemcpy(&host_loss, loss, sizeof(float), cudaMemcpyDeviceToHost));
      std::printf("loss %f\n", host_loss);
    }
  }
}

void train_checked_inline(float* w, float* loss, int n, int steps) {
  for (int s = 0; s < steps; ++s) {
    step<<<(n + 255) / 256, 256>>>(w, loss, n);
    if (cudaGetLastError() != cudaSuccess) std::exit(1);
    if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) std::exit(1);  // CHECK: GD010
  }
}

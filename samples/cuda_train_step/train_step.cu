// A hand-written CUDA training step for a tiny segmentation head, with the
// mistakes gpulint is built to catch. `gpulint samples/` reports them; the
// comments name the rule each line breaks. (See train_step_fixed.cu.)
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CUDA_CHECK(call)                                                        \
  do {                                                                          \
    cudaError_t status_ = (call);                                               \
    if (status_ != cudaSuccess) {                                               \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(status_)); \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

__global__ void sigmoid_bce(const float* logits, const float* target, float* loss, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float p = 1.0f / (1.0f + exp(-logits[i]));            // float overload: fine
    loss[i] = -(target[i] * log(p + 1e-7) +                 // GD002: 1e-7 is a double
                (1.0f - target[i]) * logf(1.0f - p + 1e-7f));
  }
}

__global__ void sgd_update(float* weights, const float* grads, float lr, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) weights[i] -= lr * grads[i];
}

float train_step(const std::vector<float>& batch, const std::vector<float>& mask, float* d_weights,
                 const float* d_grads, int n, cudaStream_t compute, cudaStream_t copy) {
  float* d_logits = nullptr;
  float* d_target = nullptr;
  float* d_loss = nullptr;
  CUDA_CHECK(cudaMalloc(&d_logits, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_target, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_loss, n * sizeof(float)));

  // GD009: std::vector memory is pageable, so this "async" copy blocks.
  CUDA_CHECK(cudaMemcpyAsync(d_logits, batch.data(), n * sizeof(float), cudaMemcpyHostToDevice, copy));
  CUDA_CHECK(cudaMemcpyAsync(d_target, mask.data(), n * sizeof(float), cudaMemcpyHostToDevice, copy));
  CUDA_CHECK(cudaStreamSynchronize(copy));

  sigmoid_bce<<<(n + 255) / 256, 256, 0, compute>>>(d_logits, d_target, d_loss, n);
  sgd_update<<<(n + 255) / 256, 256, 0, compute>>>(d_weights, d_grads, 0.01f, n);

  float* h_loss = nullptr;
  CUDA_CHECK(cudaMallocHost(&h_loss, n * sizeof(float)));
  CUDA_CHECK(cudaMemcpyAsync(h_loss, d_loss, n * sizeof(float), cudaMemcpyDeviceToHost, compute));
  float total = 0.0f;
  for (int i = 0; i < n; ++i) total += h_loss[i];  // GD003: the copy may not have finished

  CUDA_CHECK(cudaFreeAsync(d_logits, copy));  // GD004: the kernel on `compute` may still read it
  cudaFree(d_target);                          // GD006: status ignored
  CUDA_CHECK(cudaFreeHost(h_loss));
  return total / static_cast<float>(n);         // GD007: d_loss is never freed
}

// A hand-written CUDA training step for a tiny segmentation head, with
// several of the mistakes gpulint is built to catch in one function; a CHECK
// comment names the rule each line breaks. several-rules-fixed.cu is the
// corrected twin.
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
    loss[i] = -(target[i] * log(p + 1e-7) +                 // CHECK: GD002, GD002 (a double literal and log(double))
                (1.0f - target[i]) * logf(1.0f - p + 1e-7f));
  }
}

__global__ void sgd_update(float* weights, const float* grads, float lr, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) weights[i] -= lr * grads[i];
}

float train_step(const unsigned char* pixels, const unsigned char* labels, float* d_weights, const float* d_grads,
                 int n, cudaStream_t compute, cudaStream_t copy) {
  // Normalise on the host into staging vectors.
  std::vector<float> batch(n), mask(n);
  for (int i = 0; i < n; ++i) {
    batch[i] = pixels[i] / 255.0f;
    mask[i] = labels[i] > 0 ? 1.0f : 0.0f;
  }
  float* d_logits = nullptr;
  float* d_target = nullptr;
  float* d_loss = nullptr;
  CUDA_CHECK(cudaMalloc(&d_logits, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_target, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_loss, n * sizeof(float)));  // CHECK: GD007 (never freed)

  // GD009: std::vector memory is pageable, so this "async" copy blocks.
  CUDA_CHECK(cudaMemcpyAsync(d_logits, batch.data(), n * sizeof(float), cudaMemcpyHostToDevice, copy));  // CHECK: GD009
  CUDA_CHECK(cudaMemcpyAsync(d_target, mask.data(), n * sizeof(float), cudaMemcpyHostToDevice, copy));  // CHECK: GD009
  CUDA_CHECK(cudaStreamSynchronize(copy));

  sigmoid_bce<<<(n + 255) / 256, 256, 0, compute>>>(d_logits, d_target, d_loss, n);  // CHECK: GD006 (launch unchecked)
  sgd_update<<<(n + 255) / 256, 256, 0, compute>>>(d_weights, d_grads, 0.01f, n);     // CHECK: GD006

  float* h_loss = nullptr;
  CUDA_CHECK(cudaMallocHost(&h_loss, n * sizeof(float)));
  CUDA_CHECK(cudaMemcpyAsync(h_loss, d_loss, n * sizeof(float), cudaMemcpyDeviceToHost, compute));
  float total = 0.0f;
  for (int i = 0; i < n; ++i) total += h_loss[i];  // CHECK: GD003 (the copy may not have finished)

  CUDA_CHECK(cudaFreeAsync(d_logits, copy));  // CHECK: GD004 (the kernel on `compute` may still read it)
  cudaFree(d_target);                          // CHECK: GD006 (status ignored)
  CUDA_CHECK(cudaFreeHost(h_loss));
  return total / static_cast<float>(n);       
}

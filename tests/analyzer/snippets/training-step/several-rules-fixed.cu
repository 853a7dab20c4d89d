// The same training step as several-rules.cu, corrected: gpulint is silent here.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

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
    float p = 1.0f / (1.0f + expf(-logits[i]));
    loss[i] = -(target[i] * logf(p + 1e-7f) + (1.0f - target[i]) * logf(1.0f - p + 1e-7f));
  }
}

__global__ void sgd_update(float* weights, const float* grads, float lr, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) weights[i] -= lr * grads[i];
}

// `h_batch` and `h_mask` are pinned (cudaMallocHost) by the caller.
float train_step(const float* h_batch, const float* h_mask, float* d_weights, const float* d_grads, int n,
                 cudaStream_t compute, cudaStream_t copy) {
  float* d_logits = nullptr;
  float* d_target = nullptr;
  float* d_loss = nullptr;
  CUDA_CHECK(cudaMalloc(&d_logits, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_target, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_loss, n * sizeof(float)));

  cudaEvent_t copied;
  CUDA_CHECK(cudaEventCreate(&copied));
  CUDA_CHECK(cudaMemcpyAsync(d_logits, h_batch, n * sizeof(float), cudaMemcpyHostToDevice, copy));
  CUDA_CHECK(cudaMemcpyAsync(d_target, h_mask, n * sizeof(float), cudaMemcpyHostToDevice, copy));
  CUDA_CHECK(cudaEventRecord(copied, copy));
  CUDA_CHECK(cudaStreamWaitEvent(compute, copied));

  sigmoid_bce<<<(n + 255) / 256, 256, 0, compute>>>(d_logits, d_target, d_loss, n);
  CUDA_CHECK(cudaGetLastError());
  sgd_update<<<(n + 255) / 256, 256, 0, compute>>>(d_weights, d_grads, 0.01f, n);
  CUDA_CHECK(cudaGetLastError());

  float* h_loss = nullptr;
  CUDA_CHECK(cudaMallocHost(&h_loss, n * sizeof(float)));
  CUDA_CHECK(cudaMemcpyAsync(h_loss, d_loss, n * sizeof(float), cudaMemcpyDeviceToHost, compute));
  CUDA_CHECK(cudaStreamSynchronize(compute));
  float total = 0.0f;
  for (int i = 0; i < n; ++i) total += h_loss[i];

  CUDA_CHECK(cudaFreeAsync(d_logits, compute));
  CUDA_CHECK(cudaFreeAsync(d_target, compute));
  CUDA_CHECK(cudaFreeAsync(d_loss, compute));
  CUDA_CHECK(cudaEventDestroy(copied));
  CUDA_CHECK(cudaFreeHost(h_loss));
  return total / static_cast<float>(n);
}

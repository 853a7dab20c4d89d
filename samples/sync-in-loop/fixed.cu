// sync-in-loop (GD010), CUDA, fixed: every launch is checked with
// cudaGetLastError, and the host waits for the GPU only when it reads the
// epoch's loss (buggy.cu synchronises after each of the step's four kernels).
// A fault inside a kernel then shows at that read; run with
// CUDA_LAUNCH_BLOCKING=1 to find the kernel, without changing the code.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "../common/cuda_check.h"
#include "../common/pixel_head_kernels.cuh"

constexpr int kImages = 256, kBatch = 16;
constexpr int kStepsPerEpoch = kImages / kBatch, kSteps = 2 * kStepsPerEpoch;

int main() {
  std::vector<float> images, masks;
  make_shapes(images, masks, kImages, 1);
  float *d_x = nullptr, *d_t = nullptr, *d_z = nullptr, *d_w = nullptr, *d_grad = nullptr, *d_loss = nullptr;
  CUDA_CHECK(cudaMalloc(&d_x, images.size() * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_t, masks.size() * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_z, kBatch * kPixels * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_w, 4 * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_grad, 4 * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_loss, sizeof(float)));
  CUDA_CHECK(cudaMemcpy(d_x, images.data(), images.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_t, masks.data(), masks.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(d_w, 0, 4 * sizeof(float)));
  CUDA_CHECK(cudaMemset(d_grad, 0, 4 * sizeof(float)));
  CUDA_CHECK(cudaMemset(d_loss, 0, sizeof(float)));

  const int n = kBatch * kPixels, threads = 256, blocks = (n + threads - 1) / threads;
  auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < kSteps; ++step) {
    const float* x = d_x + (step % kStepsPerEpoch) * kBatch * 3 * kPixels;
    const float* t = d_t + (step % kStepsPerEpoch) * kBatch * kPixels;
    forward<<<blocks, threads>>>(x, d_w, d_z, n);
    CUDA_CHECK(cudaGetLastError());
    bce<<<blocks, threads>>>(d_z, t, d_loss, n, n);
    CUDA_CHECK(cudaGetLastError());
    weight_grad<<<blocks, threads>>>(x, d_z, d_grad, n);
    CUDA_CHECK(cudaGetLastError());
    sgd<<<1, 4>>>(d_w, d_grad, 5.0f);
    CUDA_CHECK(cudaGetLastError());
    if ((step + 1) % kStepsPerEpoch == 0) {  // the epoch's loss, read once per epoch
      float loss = 0.0f;
      CUDA_CHECK(cudaMemcpy(&loss, d_loss, sizeof(float), cudaMemcpyDeviceToHost));
      CUDA_CHECK(cudaMemset(d_loss, 0, sizeof(float)));
      const auto now = std::chrono::steady_clock::now();
      std::printf("epoch %d: train loss %.4f, %.1f us per step\n", (step + 1) / kStepsPerEpoch, loss / kStepsPerEpoch,
                  std::chrono::duration<double, std::micro>(now - start).count() / kStepsPerEpoch);
      start = std::chrono::steady_clock::now();
    }
  }
  CUDA_CHECK(cudaFree(d_x));
  CUDA_CHECK(cudaFree(d_t));
  CUDA_CHECK(cudaFree(d_z));
  CUDA_CHECK(cudaFree(d_w));
  CUDA_CHECK(cudaFree(d_grad));
  CUDA_CHECK(cudaFree(d_loss));
}

// launch-bound (GD011), CUDA: a per-pixel segmentation head (a 1x1
// convolution trained with SGD on bright shapes in noisy images) whose
// kernels were written for one image, so each step launches them image by
// image: 49 launches a step, each kernel a few microseconds on 1024 pixels.
// The host cannot launch as fast as the GPU finishes them, and the GPU
// waits. The fixed twin launches each kernel once over the batch (fixed.cu).
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

  const int n = kBatch * kPixels, threads = 256;
  auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < kSteps; ++step) {
    const float* x = d_x + (step % kStepsPerEpoch) * kBatch * 3 * kPixels;
    const float* t = d_t + (step % kStepsPerEpoch) * kBatch * kPixels;
    for (int image = 0; image < kBatch; ++image) {  // the kernels were written for one image
      const int at = image * kPixels, image_blocks = (kPixels + threads - 1) / threads;
      forward<<<image_blocks, threads>>>(x + 3 * at, d_w, d_z + at, kPixels);
      CUDA_CHECK(cudaGetLastError());
      bce<<<image_blocks, threads>>>(d_z + at, t + at, d_loss, kPixels, n);
      CUDA_CHECK(cudaGetLastError());
      weight_grad<<<image_blocks, threads>>>(x + 3 * at, d_z + at, d_grad, kPixels);
      CUDA_CHECK(cudaGetLastError());
    }
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

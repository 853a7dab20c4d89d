// device-checkpoint (GD012), CUDA, fixed: the same training loop for a
// per-pixel segmentation head, which copies the trained weights to a host
// buffer before writing them to the file (the buggy twin wrote the
// cudaMalloc'd buffer itself, which the host cannot read: buggy.cu).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <vector>

#include "../common/cuda_check.h"
#include "../common/pixel_head_fused.cuh"

constexpr int kImages = 128, kBatch = 16, kSteps = kImages / kBatch, kEpochs = 2;

int main() {
  std::vector<float> images, masks;
  make_discs(images, masks, kImages);
  float *d_images = nullptr, *d_masks = nullptr, *d_w = nullptr, *d_grad = nullptr, *d_loss = nullptr;
  CUDA_CHECK(cudaMalloc(&d_images, images.size() * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(d_images, images.data(), images.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMalloc(&d_masks, masks.size() * sizeof(float)));  // the kernel reads the masks on the device too
  CUDA_CHECK(cudaMemcpy(d_masks, masks.data(), masks.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMalloc(&d_w, 4 * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_grad, 4 * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_loss, kEpochs * kSteps * sizeof(float)));
  CUDA_CHECK(cudaMemset(d_w, 0, 4 * sizeof(float)));
  CUDA_CHECK(cudaMemset(d_grad, 0, 4 * sizeof(float)));
  CUDA_CHECK(cudaMemset(d_loss, 0, kEpochs * kSteps * sizeof(float)));

  const int pixels = kBatch * kPixels;
  for (int epoch = 0; epoch < kEpochs; ++epoch)
    for (int step = 0; step < kSteps; ++step) {
      forward_backward<<<(pixels + 255) / 256, 256>>>(d_images + step * 3 * pixels, d_masks + step * pixels, d_w,
                                                      d_grad, d_loss + epoch * kSteps + step, pixels);
      sgd<<<1, 32>>>(d_w, d_grad, 1.0f);
      CUDA_CHECK(cudaGetLastError());  // a launch that never started is seen only here
    }
  CUDA_CHECK(cudaDeviceSynchronize());  // a kernel's fault surfaces here

  std::vector<float> losses(kEpochs * kSteps);
  CUDA_CHECK(cudaMemcpy(losses.data(), d_loss, losses.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    float sum = 0.0f;
    for (int step = 0; step < kSteps; ++step) sum += losses[epoch * kSteps + step];
    std::printf("epoch %d: loss %.4f\n", epoch, sum / kSteps);
  }

  // Save the trained weights (three and the bias) for the inference code.
  std::FILE* file = std::fopen("head_weights.bin", "wb");
  float w[4];
  CUDA_CHECK(cudaMemcpy(w, d_w, sizeof w, cudaMemcpyDeviceToHost));  // the host can only write what it can read
  const std::size_t saved = std::fwrite(w, sizeof(float), 4, file);
  std::fclose(file);
  std::printf("saved %zu weights to head_weights.bin\n", saved);
  CUDA_CHECK(cudaFree(d_images));
  CUDA_CHECK(cudaFree(d_masks));
  CUDA_CHECK(cudaFree(d_w));
  CUDA_CHECK(cudaFree(d_grad));
  CUDA_CHECK(cudaFree(d_loss));
}

// device-mismatch (GD001), CUDA: a hand-written training loop for a per-pixel
// segmentation head (a 1x1 convolution from 3 channels to one logit, sigmoid
// and binary cross-entropy, plain SGD) on noisy images of discs. The images
// are copied to the device; the masks are not: the kernel is handed the host
// vector's data(). The GPU cannot read pageable host memory, so the kernel
// faults, and the synchronisation after the loop returns error 700 (an
// illegal memory access), which the program reports and dies of (exit 1).
// The fixed twin copies the masks to the device too (fixed.cu).
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "../common/cuda_check.h"
#include "../common/pixel_head_fused.cuh"

constexpr int kImages = 128, kBatch = 16, kSteps = kImages / kBatch, kEpochs = 2;

int main() {
  std::vector<float> images, masks;
  make_discs(images, masks, kImages);
  float *d_images = nullptr, *d_w = nullptr, *d_grad = nullptr, *d_loss = nullptr;
  CUDA_CHECK(cudaMalloc(&d_images, images.size() * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(d_images, images.data(), images.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMalloc(&d_w, 4 * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_grad, 4 * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_loss, kEpochs * kSteps * sizeof(float)));
  CUDA_CHECK(cudaMemset(d_w, 0, 4 * sizeof(float)));
  CUDA_CHECK(cudaMemset(d_grad, 0, 4 * sizeof(float)));
  CUDA_CHECK(cudaMemset(d_loss, 0, kEpochs * kSteps * sizeof(float)));

  const int pixels = kBatch * kPixels;
  for (int epoch = 0; epoch < kEpochs; ++epoch)
    for (int step = 0; step < kSteps; ++step) {
      // The masks of this batch straight from the host vector: no device copy was made.
      forward_backward<<<(pixels + 255) / 256, 256>>>(d_images + step * 3 * pixels, masks.data() + step * pixels, d_w,
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
  CUDA_CHECK(cudaFree(d_images));
  CUDA_CHECK(cudaFree(d_w));
  CUDA_CHECK(cudaFree(d_grad));
  CUDA_CHECK(cudaFree(d_loss));
}

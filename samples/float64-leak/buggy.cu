// float64-leak (GD002), CUDA: a hand-written training loop for a per-pixel
// segmentation head (a 1x1 convolution from 3 channels to one logit, sigmoid
// and binary cross-entropy, plain SGD) on noisy images of discs. The sigmoid
// is written with 1.0 where 1.0f was meant: the literals are double, so the
// addition and the division run in double precision, for every pixel of
// every step. GPUs run FP64 at a fraction of the FP32 rate (1/64 on consumer
// parts): the step is slower, and nothing fails. The program prints its time
// per step. The kernel's name and signature say float, so a trace cannot
// tell it computes in double; gpulint sees the literals.
// The fixed twin writes them as float literals (fixed.cu).
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "../common/cuda_check.h"
#include "../common/disc_images.h"

constexpr int kImages = 128, kBatch = 16, kSteps = kImages / kBatch, kEpochs = 2;

// One thread per pixel of the batch: logit, loss and the gradient of the
// three weights and the bias, summed over the batch with atomics.
__global__ void forward_backward(const float* images, const float* masks, const float* w, float* grad, float* loss,
                                 int pixels) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= pixels) return;
  const float* x = images + (i / kPixels) * 3 * kPixels + i % kPixels;
  const float z = w[0] * x[0] + w[1] * x[kPixels] + w[2] * x[2 * kPixels] + w[3];
  const float p = 1.0 / (1.0 + expf(-z)), y = masks[i], g = (p - y) / pixels;
  atomicAdd(&grad[0], g * x[0]);
  atomicAdd(&grad[1], g * x[kPixels]);
  atomicAdd(&grad[2], g * x[2 * kPixels]);
  atomicAdd(&grad[3], g);
  atomicAdd(loss, -(y * logf(p + 1e-7f) + (1.0f - y) * logf(1.0f - p + 1e-7f)) / pixels);
}

__global__ void sgd(float* w, float* grad, float lr) {
  const int i = threadIdx.x;
  if (i < 4) {
    w[i] -= lr * grad[i];
    grad[i] = 0.0f;
  }
}

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

  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  const int pixels = kBatch * kPixels;
  CUDA_CHECK(cudaEventRecord(start));
  for (int epoch = 0; epoch < kEpochs; ++epoch)
    for (int step = 0; step < kSteps; ++step) {
      forward_backward<<<(pixels + 255) / 256, 256>>>(d_images + step * 3 * pixels, d_masks + step * pixels, d_w,
                                                      d_grad, d_loss + epoch * kSteps + step, pixels);
      sgd<<<1, 32>>>(d_w, d_grad, 1.0f);
      CUDA_CHECK(cudaGetLastError());  // a launch that never started is seen only here
    }
  CUDA_CHECK(cudaEventRecord(stop));
  CUDA_CHECK(cudaEventSynchronize(stop));  // a kernel's fault surfaces here
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  std::printf("training: %.3f ms per step\n", ms / (kEpochs * kSteps));

  std::vector<float> losses(kEpochs * kSteps);
  CUDA_CHECK(cudaMemcpy(losses.data(), d_loss, losses.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    float sum = 0.0f;
    for (int step = 0; step < kSteps; ++step) sum += losses[epoch * kSteps + step];
    std::printf("epoch %d: loss %.4f\n", epoch, sum / kSteps);
  }
  CUDA_CHECK(cudaFree(d_images));
  CUDA_CHECK(cudaFree(d_masks));
  CUDA_CHECK(cudaFree(d_w));
  CUDA_CHECK(cudaFree(d_grad));
  CUDA_CHECK(cudaFree(d_loss));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
}

// unchecked-cuda-error (GD006), CUDA: a per-pixel segmentation head (a 3x3
// convolution of the 3 input channels, then a sigmoid) trained with SGD on
// synthetic discs made on the device. No status is ever checked: neither the
// runtime calls' nor the launches'. And the gradient kernel is launched one
// block per image, one thread per pixel: 64*64 = 4096 threads, past the 1024
// any GPU allows. That launch fails with cudaErrorInvalidConfiguration,
// nothing reads the error, and the kernel never runs: the gradient stays
// zero and the weights never change, so training "runs" and the loss never
// moves. The fixed twin checks every call and launch, and launches the
// gradient with 256 threads per block (fixed.cu).
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "../common/device_batches.cuh"

constexpr int kSteps = 200;

__device__ float logit(const float* image, const float* w, int i) {
  const int b = i / (kSize * kSize), y = i / kSize % kSize, x = i % kSize;
  float z = w[kWeights - 1];
  for (int c = 0; c < 3; ++c)
    for (int k = 0; k < 9; ++k) z += w[c * 9 + k] * input(image, b, c, y + k / 3 - 1, x + k % 3 - 1);
  return z;
}

// Mean binary cross-entropy of the batch, added to *loss.
__global__ void bce_loss(const float* image, const float* mask, const float* w, float* loss) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kPixels) return;
  const float p = 1.0f / (1.0f + expf(-logit(image, w, i)));
  atomicAdd(loss, -(mask[i] * logf(p + 1e-7f) + (1.0f - mask[i]) * logf(1.0f - p + 1e-7f)) / kPixels);
}

// d(mean BCE)/dw, added to grad (zeroed before).
__global__ void bce_grad(const float* image, const float* mask, const float* w, float* grad) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kPixels) return;
  const int b = i / (kSize * kSize), y = i / kSize % kSize, x = i % kSize;
  const float d = (1.0f / (1.0f + expf(-logit(image, w, i))) - mask[i]) / kPixels;
  for (int c = 0; c < 3; ++c)
    for (int k = 0; k < 9; ++k) atomicAdd(&grad[c * 9 + k], d * input(image, b, c, y + k / 3 - 1, x + k % 3 - 1));
  atomicAdd(&grad[kWeights - 1], d);
}

__global__ void sgd(float* w, const float* grad, float lr) {
  if (threadIdx.x < kWeights) w[threadIdx.x] -= lr * grad[threadIdx.x];
}

int main() {
  float *image, *mask, *w, *grad, *losses;
  cudaMalloc(&image, 3 * kPixels * sizeof(float));
  cudaMalloc(&mask, kPixels * sizeof(float));
  cudaMalloc(&w, kWeights * sizeof(float));
  cudaMalloc(&grad, kWeights * sizeof(float));
  cudaMalloc(&losses, kSteps * sizeof(float));
  cudaMemset(w, 0, kWeights * sizeof(float));
  cudaMemset(losses, 0, kSteps * sizeof(float));

  const int blocks = (kPixels + 255) / 256;
  for (int step = 0; step < kSteps; ++step) {
    make_batch<<<blocks, 256>>>(image, mask, step);
    bce_loss<<<blocks, 256>>>(image, mask, w, losses + step);
    cudaMemset(grad, 0, kWeights * sizeof(float));
    bce_grad<<<kBatch, kSize * kSize>>>(image, mask, w, grad);  // one thread per pixel of an image
    sgd<<<1, 32>>>(w, grad, 0.5f);
  }
  std::vector<float> loss(kSteps);
  cudaMemcpy(loss.data(), losses, kSteps * sizeof(float), cudaMemcpyDeviceToHost);
  std::printf("loss: first step %.4f, last step %.4f\n", loss.front(), loss.back());
  if (loss.back() > loss.front() - 0.05f)
    std::printf("symptom: the loss did not move in %d steps (%.4f -> %.4f): the weights were never updated\n",
                kSteps, loss.front(), loss.back());
  cudaFree(image);
  cudaFree(mask);
  cudaFree(w);
  cudaFree(grad);
  cudaFree(losses);
}

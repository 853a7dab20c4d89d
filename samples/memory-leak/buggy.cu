// memory-leak (GD007), CUDA: a per-pixel segmentation head (a 3x3
// convolution of the 3 input channels, then a sigmoid) trained with SGD on
// synthetic discs made on the device. Each step allocates a buffer for the
// per-pixel losses it then sums, and never frees it: 256 KiB more device
// memory is held after every step, until the run ends (or, longer, runs out).
// The fixed twin frees it at the end of the step (fixed.cu).
#include <cuda_runtime.h>

#include <cstdio>

#include "../common/cuda_check.h"
#include "../common/device_batches.cuh"

constexpr int kSteps = 200;

// Per-pixel binary cross-entropy into pixel_loss, d(mean BCE)/dw added to grad.
__global__ void bce(const float* image, const float* mask, const float* w, float* pixel_loss, float* grad) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kPixels) return;
  const int b = i / (kSize * kSize), y = i / kSize % kSize, x = i % kSize;
  float z = w[kWeights - 1];
  for (int c = 0; c < 3; ++c)
    for (int k = 0; k < 9; ++k) z += w[c * 9 + k] * input(image, b, c, y + k / 3 - 1, x + k % 3 - 1);
  const float p = 1.0f / (1.0f + expf(-z)), d = (p - mask[i]) / kPixels;
  pixel_loss[i] = -(mask[i] * logf(p + 1e-7f) + (1.0f - mask[i]) * logf(1.0f - p + 1e-7f));
  for (int c = 0; c < 3; ++c)
    for (int k = 0; k < 9; ++k) atomicAdd(&grad[c * 9 + k], d * input(image, b, c, y + k / 3 - 1, x + k % 3 - 1));
  atomicAdd(&grad[kWeights - 1], d);
}

__global__ void mean(const float* values, int n, float* out) {
  float s = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += values[i];
  atomicAdd(out, s / n);
}

__global__ void sgd(float* w, const float* grad, float lr) {
  if (threadIdx.x < kWeights) w[threadIdx.x] -= lr * grad[threadIdx.x];
}

// One SGD step on batch `step`; its mean loss is added to *loss.
void train_step(int step, float* image, float* mask, float* w, float* grad, float* loss) {
  float* pixel_loss = nullptr;
  CUDA_CHECK(cudaMalloc(&pixel_loss, kPixels * sizeof(float)));
  make_batch<<<(kPixels + 255) / 256, 256>>>(image, mask, step);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaMemset(grad, 0, kWeights * sizeof(float)));
  bce<<<(kPixels + 255) / 256, 256>>>(image, mask, w, pixel_loss, grad);
  CUDA_CHECK(cudaGetLastError());
  mean<<<1, 256>>>(pixel_loss, kPixels, loss);
  CUDA_CHECK(cudaGetLastError());
  sgd<<<1, 32>>>(w, grad, 0.5f);
  CUDA_CHECK(cudaGetLastError());
}

int main() {
  float *image, *mask, *w, *grad, *losses;
  CUDA_CHECK(cudaMalloc(&image, 3 * kPixels * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&mask, kPixels * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&w, kWeights * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&grad, kWeights * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&losses, kSteps * sizeof(float)));
  CUDA_CHECK(cudaMemset(w, 0, kWeights * sizeof(float)));
  CUDA_CHECK(cudaMemset(losses, 0, kSteps * sizeof(float)));

  size_t free_after_first = 0, free_at_end = 0, total = 0;
  for (int step = 0; step < kSteps; ++step) {
    train_step(step, image, mask, w, grad, losses + step);
    if (step == 0) CUDA_CHECK(cudaMemGetInfo(&free_after_first, &total));
  }
  CUDA_CHECK(cudaMemGetInfo(&free_at_end, &total));
  float loss[2];
  CUDA_CHECK(cudaMemcpy(&loss[0], losses, sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(&loss[1], losses + kSteps - 1, sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("loss: first step %.4f, last step %.4f\n", loss[0], loss[1]);
  // After the first step a healthy loop holds no more device memory.
  const long long lost = static_cast<long long>(free_after_first) - static_cast<long long>(free_at_end);
  if (lost > (1 << 20))
    std::printf("symptom: free device memory fell by %lld MiB over %d steps, and nothing gave it back\n",
                lost >> 20, kSteps - 1);
  else
    std::printf("free device memory steady over %d steps\n", kSteps - 1);
  CUDA_CHECK(cudaFree(image));
  CUDA_CHECK(cudaFree(mask));
  CUDA_CHECK(cudaFree(w));
  CUDA_CHECK(cudaFree(grad));
  CUDA_CHECK(cudaFree(losses));
}

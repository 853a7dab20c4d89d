// out-of-memory (GD008), CUDA, fixed: the batch is sized for the GPU, not
// carried over from the 64x64 prototype: 4 images of 2048x2048, 192 MiB of
// images, and the run fits (buggy.cu asks for 4096 of them, 192 GiB).
#include <cuda_runtime.h>

#include <cstdio>

#include "../common/cuda_check.h"

constexpr size_t kSize = 2048, kBatch = 4, kPixels = kBatch * kSize * kSize;
constexpr int kWeights = 3 * 9 + 1, kSteps = 20;

__device__ float input(const float* image, size_t b, int c, long y, long x) {
  return y < 0 || y >= long(kSize) || x < 0 || x >= long(kSize) ? 0.0f : image[((b * 3 + c) * kSize + y) * kSize + x];
}

// One disc per image, placed by (step, image); the mask is the disc.
__global__ void make_batch(float* image, float* mask, int step) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i >= kPixels) return;
  const size_t b = i / (kSize * kSize), y = i / kSize % kSize, x = i % kSize;
  const unsigned h = (step * 7919u + unsigned(b)) * 2654435761u;
  const long cx = 512 + h % 1024, cy = 512 + (h >> 8) % 1024, r = 192 + (h >> 16) % 320;
  const float inside = (long(x) - cx) * (long(x) - cx) + (long(y) - cy) * (long(y) - cy) < r * r ? 1.0f : 0.0f;
  mask[i] = inside;
  for (int c = 0; c < 3; ++c) image[((b * 3 + c) * kSize + y) * kSize + x] = 0.2f + 0.6f * inside - 0.1f * c;
}

// Mean binary cross-entropy added to *loss, d(mean BCE)/dw added to grad.
__global__ void bce(const float* image, const float* mask, const float* w, float* loss, float* grad) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i >= kPixels) return;
  const size_t b = i / (kSize * kSize);
  const long y = i / kSize % kSize, x = i % kSize;
  float z = w[kWeights - 1];
  for (int c = 0; c < 3; ++c)
    for (int k = 0; k < 9; ++k) z += w[c * 9 + k] * input(image, b, c, y + k / 3 - 1, x + k % 3 - 1);
  const float p = 1.0f / (1.0f + expf(-z)), d = (p - mask[i]) / kPixels;
  atomicAdd(loss, -(mask[i] * logf(p + 1e-7f) + (1.0f - mask[i]) * logf(1.0f - p + 1e-7f)) / kPixels);
  for (int c = 0; c < 3; ++c)
    for (int k = 0; k < 9; ++k) atomicAdd(&grad[c * 9 + k], d * input(image, b, c, y + k / 3 - 1, x + k % 3 - 1));
  atomicAdd(&grad[kWeights - 1], d);
}

__global__ void sgd(float* w, const float* grad, float lr) {
  if (threadIdx.x < kWeights) w[threadIdx.x] -= lr * grad[threadIdx.x];
}

int main() {
  std::printf("batch of %zu images of %zux%zu: %zu MiB of images\n", kBatch, kSize, kSize,
              3 * kPixels * sizeof(float) >> 20);
  float *image, *mask, *w, *grad, *losses;
  CUDA_CHECK(cudaMalloc(&image, 3 * kPixels * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&mask, kPixels * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&w, kWeights * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&grad, kWeights * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&losses, kSteps * sizeof(float)));
  CUDA_CHECK(cudaMemset(w, 0, kWeights * sizeof(float)));
  CUDA_CHECK(cudaMemset(losses, 0, kSteps * sizeof(float)));

  const unsigned blocks = unsigned((kPixels + 255) / 256);
  for (int step = 0; step < kSteps; ++step) {
    make_batch<<<blocks, 256>>>(image, mask, step);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemset(grad, 0, kWeights * sizeof(float)));
    bce<<<blocks, 256>>>(image, mask, w, losses + step, grad);
    CUDA_CHECK(cudaGetLastError());
    sgd<<<1, 32>>>(w, grad, 0.5f);
    CUDA_CHECK(cudaGetLastError());
  }
  float loss[2];
  CUDA_CHECK(cudaMemcpy(&loss[0], losses, sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(&loss[1], losses + kSteps - 1, sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("loss: first step %.4f, last step %.4f\n", loss[0], loss[1]);
  CUDA_CHECK(cudaFree(image));
  CUDA_CHECK(cudaFree(mask));
  CUDA_CHECK(cudaFree(w));
  CUDA_CHECK(cudaFree(grad));
  CUDA_CHECK(cudaFree(losses));
}

// The data of the samples that make their batches on the GPU (memory-leak,
// unchecked-cuda-error): batches of kBatch 3-channel kSize x kSize images of
// one bright disc, channel-major, built by a kernel from the step number, and
// the inputs of a 3x3 convolution over them (kWeights: 27 weights and a bias).
#pragma once

#include <cuda_runtime.h>

constexpr int kSize = 64, kBatch = 16, kPixels = kBatch * kSize * kSize, kWeights = 3 * 9 + 1;

// Channel c of image b at (y, x), 0 outside the image (the convolution's padding).
__device__ float input(const float* image, int b, int c, int y, int x) {
  return y < 0 || y >= kSize || x < 0 || x >= kSize ? 0.0f : image[((b * 3 + c) * kSize + y) * kSize + x];
}

// One disc per image, placed by (step, image); the mask is the disc.
__global__ void make_batch(float* image, float* mask, int step) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kPixels) return;
  const int b = i / (kSize * kSize), y = i / kSize % kSize, x = i % kSize;
  const unsigned h = (step * 7919u + b) * 2654435761u;
  const int cx = 16 + h % 32, cy = 16 + (h >> 8) % 32, r = 6 + (h >> 16) % 10;
  const float inside = (x - cx) * (x - cx) + (y - cy) * (y - cy) < r * r ? 1.0f : 0.0f;
  mask[i] = inside;
  for (int c = 0; c < 3; ++c) image[((b * 3 + c) * kSize + y) * kSize + x] = 0.2f + 0.6f * inside - 0.1f * c;
}

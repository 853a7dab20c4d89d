// The data and model of the samples that stream batches (premature-free,
// unsynced-transfer, pageable-async-copy): kImages noisy images of a bright
// disc, stored batch by batch with each batch channel-major (kPixels = the
// pixels of one batch), and a per-pixel segmentation head (a 1x1 convolution
// from the 3 channels to one logit, sigmoid and binary cross-entropy, plain
// SGD on its three weights and bias) as forward, backward and sgd kernels.
#pragma once

#include <cuda_runtime.h>

constexpr int kSize = 32, kImages = 128, kBatch = 16, kPixels = kBatch * kSize * kSize;

// x holds kImages / kBatch batches of 3 * kPixels values, y as many of kPixels.
inline void make_batches(float* x, float* y) {
  unsigned s = 1;
  auto uniform = [&s] { return ((s = s * 1664525u + 1013904223u) >> 8) * (1.0f / 16777216.0f); };
  for (int b = 0; b < kImages / kBatch; ++b)
    for (int k = 0; k < kBatch; ++k) {
      const float cx = uniform() * kSize, cy = uniform() * kSize, r = (0.15f + 0.2f * uniform()) * kSize;
      for (int p = 0; p < kSize * kSize; ++p) {
        const float dx = p % kSize - cx, dy = p / kSize - cy;
        const float in = dx * dx + dy * dy < r * r ? 1.0f : 0.0f;
        const int i = k * kSize * kSize + p;
        y[b * kPixels + i] = in;
        for (int c = 0; c < 3; ++c)
          x[(b * 3 + c) * kPixels + i] = 0.2f + 0.6f * in * (c + 1) / 3 + 0.3f * uniform();
      }
    }
}

__global__ void forward(const float* x, const float* w, float* logits, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) logits[i] = w[0] * x[i] + w[1] * x[n + i] + w[2] * x[2 * n + i] + w[3];
}

// Gradient of the mean binary cross-entropy with logits, into grad[0..3].
__global__ void backward(const float* x, const float* logits, const float* y, float* grad, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float d = (1.0f / (1.0f + expf(-logits[i])) - y[i]) / n;
  for (int c = 0; c < 3; ++c) atomicAdd(&grad[c], d * x[c * n + i]);
  atomicAdd(&grad[3], d);
}

__global__ void sgd(float* w, float* grad, float lr) {
  const int i = threadIdx.x;
  if (i < 4) {
    w[i] -= lr * grad[i];
    grad[i] = 0.0f;
  }
}

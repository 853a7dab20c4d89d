// A per-pixel segmentation head (a 1x1 convolution from the 3 channels to
// one logit, sigmoid and binary cross-entropy, plain SGD on its three weights
// and bias) as four kernels a step, over the images of disc_images.h: each
// launch covers n pixels, of one image or of a whole batch.
#pragma once

#include <cuda_runtime.h>

#include "disc_images.h"

__device__ float pixel(const float* x, int i, int c) { return x[(i / kPixels) * 3 * kPixels + c * kPixels + i % kPixels]; }

__global__ void forward(const float* x, const float* w, float* z, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = w[0] * pixel(x, i, 0) + w[1] * pixel(x, i, 1) + w[2] * pixel(x, i, 2) + w[3];
}

// Sigmoid-BCE: the loss, averaged over the batch's `pixels` into *loss, and
// its gradient in place of z.
__global__ void bce(float* z, const float* t, float* loss, int n, int pixels) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float p = 1.0f / (1.0f + expf(-z[i]));
  atomicAdd(loss, -(t[i] * logf(p + 1e-7f) + (1.0f - t[i]) * logf(1.0f - p + 1e-7f)) / static_cast<float>(pixels));
  z[i] = (p - t[i]) / static_cast<float>(pixels);
}

__global__ void weight_grad(const float* x, const float* dz, float* grad, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  for (int c = 0; c < 3; ++c) atomicAdd(&grad[c], dz[i] * pixel(x, i, c));
  atomicAdd(&grad[3], dz[i]);
}

// Launched with one thread per weight (4).
__global__ void sgd(float* w, float* grad, float lr) {
  w[threadIdx.x] -= lr * grad[threadIdx.x];
  grad[threadIdx.x] = 0.0f;
}

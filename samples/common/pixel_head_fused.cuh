// A per-pixel segmentation head (a 1x1 convolution from the 3 channels to
// one logit, sigmoid and binary cross-entropy, plain SGD on its three weights
// and bias) as one kernel a step, over the images of disc_images.h.
#pragma once

#include <cuda_runtime.h>

#include "disc_images.h"

// One thread per pixel of the batch: logit, loss and the gradient of the
// three weights and the bias, summed over the batch with atomics.
__global__ void forward_backward(const float* images, const float* masks, const float* w, float* grad, float* loss,
                                 int pixels) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= pixels) return;
  const float* x = images + (i / kPixels) * 3 * kPixels + i % kPixels;
  const float z = w[0] * x[0] + w[1] * x[kPixels] + w[2] * x[2 * kPixels] + w[3];
  const float p = 1.0f / (1.0f + expf(-z)), y = masks[i], g = (p - y) / pixels;
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

// scalar-indexing (GD005), CUDA, fixed: the predicted mask comes back in one
// cudaMemcpy and the validation IoU is counted from the host copy
// (buggy.cu copies it one float at a time).
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "../common/cuda_check.h"
#include "../common/disc_images.h"

constexpr int kImages = 64, kBatch = 16, kVal = 16;
constexpr int kStepsPerEpoch = kImages / kBatch, kSteps = 2 * kStepsPerEpoch;

// Forward, sigmoid-BCE and the gradient of the 3 weights and the bias.
__global__ void forward_backward(const float* x, const float* t, const float* w, float* grad, int images) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= images * kPixels) return;
  const float* px = x + (i / kPixels) * 3 * kPixels + i % kPixels;
  const float z = w[0] * px[0] + w[1] * px[kPixels] + w[2] * px[2 * kPixels] + w[3];
  const float d = (1.0f / (1.0f + expf(-z)) - t[i]) / static_cast<float>(images * kPixels);
  for (int c = 0; c < 3; ++c) atomicAdd(&grad[c], d * px[c * kPixels]);
  atomicAdd(&grad[3], d);
}

__global__ void sgd(float* w, float* grad, float lr) {
  w[threadIdx.x] -= lr * grad[threadIdx.x];
  grad[threadIdx.x] = 0.0f;
}

__global__ void predict(const float* x, const float* w, float* mask, int images) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= images * kPixels) return;
  const float* px = x + (i / kPixels) * 3 * kPixels + i % kPixels;
  mask[i] = w[0] * px[0] + w[1] * px[kPixels] + w[2] * px[2 * kPixels] + w[3] > 0.0f ? 1.0f : 0.0f;
}

int main() {
  std::vector<float> images, masks, val_images, val_masks;
  make_shapes(images, masks, kImages, 1);
  make_shapes(val_images, val_masks, kVal, 99);
  float *d_x = nullptr, *d_t = nullptr, *d_vx = nullptr, *d_pred = nullptr, *d_w = nullptr, *d_grad = nullptr;
  CUDA_CHECK(cudaMalloc(&d_x, images.size() * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_t, masks.size() * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_vx, val_images.size() * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_pred, val_masks.size() * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_w, 4 * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_grad, 4 * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(d_x, images.data(), images.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_t, masks.data(), masks.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_vx, val_images.data(), val_images.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(d_w, 0, 4 * sizeof(float)));
  CUDA_CHECK(cudaMemset(d_grad, 0, 4 * sizeof(float)));

  const int threads = 256, blocks = (kBatch * kPixels + threads - 1) / threads;
  for (int step = 0; step < kSteps; ++step) {
    const int b = step % kStepsPerEpoch;
    forward_backward<<<blocks, threads>>>(d_x + b * kBatch * 3 * kPixels, d_t + b * kBatch * kPixels, d_w, d_grad, kBatch);
    CUDA_CHECK(cudaGetLastError());
    sgd<<<1, 4>>>(d_w, d_grad, 5.0f);
    CUDA_CHECK(cudaGetLastError());
    if ((step + 1) % kStepsPerEpoch == 0) {  // validation at the end of each epoch
      predict<<<(kVal * kPixels + threads - 1) / threads, threads>>>(d_vx, d_w, d_pred, kVal);
      CUDA_CHECK(cudaGetLastError());
      const auto start = std::chrono::steady_clock::now();
      double inter = 0, uni = 0;
      int reads = 0;
      std::vector<float> pred(val_masks.size());
      CUDA_CHECK(cudaMemcpy(pred.data(), d_pred, pred.size() * sizeof(float), cudaMemcpyDeviceToHost));  // one copy
      ++reads;
      for (int i = 0; i < kVal * kPixels; ++i) {
        const float p = pred[i];
        inter += p * val_masks[i];
        uni += p + val_masks[i] - p * val_masks[i];
      }
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      std::printf("epoch %d: val IoU %.3f (%.2f ms to read the mask)\n", (step + 1) / kStepsPerEpoch, uni > 0 ? inter / uni : 1.0, ms);
      if (reads > 1) std::printf("symptom: %d blocking copies of 4 B to read one mask\n", reads);
      else std::printf("one copy of %zu B to read the mask\n", pred.size() * sizeof(float));
    }
  }
  CUDA_CHECK(cudaFree(d_x));
  CUDA_CHECK(cudaFree(d_t));
  CUDA_CHECK(cudaFree(d_vx));
  CUDA_CHECK(cudaFree(d_pred));
  CUDA_CHECK(cudaFree(d_w));
  CUDA_CHECK(cudaFree(d_grad));
}

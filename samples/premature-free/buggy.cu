// premature-free (GD004), CUDA: a per-pixel segmentation head (a 1x1
// convolution over the three channels) trained on synthetic discs, with a
// precision-recall curve of every step computed on a second stream so that
// it overlaps training. Each step's logits come from cudaMallocAsync on the
// training stream and are freed there with cudaFreeAsync while the curve's
// kernel on the metrics stream still reads them: the pool hands the block
// to the next step's logits at once, whose forward pass overwrites it, and
// the logged curve is computed partly from the next step. fixed.cu makes the
// training stream wait for the metrics stream before the free.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "../common/cuda_check.h"
#include "../common/batch_head.cuh"

constexpr int kThresholds = 256;  // points of the precision-recall curve

// True positives of the prediction at each of kThresholds logit thresholds
// (one thread each): a precision-recall curve for the training log.
__global__ void pr_curve(const float* logits, const float* y, float* true_positives, int n) {
  const float threshold = -8.0f + 16.0f * threadIdx.x / kThresholds;
  float tp = 0.0f;
  for (int i = 0; i < n; ++i) tp += logits[i] > threshold ? y[i] : 0.0f;
  true_positives[threadIdx.x] = tp;
}

int main() {
  std::vector<float> x(kImages / kBatch * 3 * kPixels), y(kImages / kBatch * kPixels);
  make_batches(x.data(), y.data());
  const int blocks = (kPixels + 255) / 256, batches = kImages / kBatch, steps = 10 * batches;
  float *d_x = nullptr, *d_y = nullptr, *d_w = nullptr, *d_grad = nullptr, *d_logged = nullptr, *d_safe = nullptr;
  CUDA_CHECK(cudaMalloc(&d_x, x.size() * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_y, y.size() * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_w, 4 * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_grad, 4 * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_logged, steps * kThresholds * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_safe, steps * kThresholds * sizeof(float)));
  // The dataset fits on the GPU.
  CUDA_CHECK(cudaMemcpy(d_x, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_y, y.data(), y.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(d_w, 0, 4 * sizeof(float)));
  CUDA_CHECK(cudaMemset(d_grad, 0, 4 * sizeof(float)));
  cudaStream_t train, metrics;
  CUDA_CHECK(cudaStreamCreateWithFlags(&train, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&metrics, cudaStreamNonBlocking));
  cudaEvent_t stepped;
  CUDA_CHECK(cudaEventCreateWithFlags(&stepped, cudaEventDisableTiming));

  for (int step = 0; step < steps; ++step) {
    const float* bx = d_x + step % batches * 3 * kPixels;
    const float* by = d_y + step % batches * kPixels;
    float* d_logits = nullptr;
    CUDA_CHECK(cudaMallocAsync(&d_logits, kPixels * sizeof(float), train));
    forward<<<blocks, 256, 0, train>>>(bx, d_w, d_logits, kPixels);
    backward<<<blocks, 256, 0, train>>>(bx, d_logits, by, d_grad, kPixels);
    sgd<<<1, 4, 0, train>>>(d_w, d_grad, 2.0f);
    // The measurement: the same curve in the training stream's order.
    pr_curve<<<1, kThresholds, 0, train>>>(d_logits, by, d_safe + step * kThresholds, kPixels);
    CUDA_CHECK(cudaEventRecord(stepped, train));
    CUDA_CHECK(cudaStreamWaitEvent(metrics, stepped));
    // The logged curve, on the metrics stream: it overlaps the next step.
    pr_curve<<<1, kThresholds, 0, metrics>>>(d_logits, by, d_logged + step * kThresholds, kPixels);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaFreeAsync(d_logits, train));  // the metrics stream may not have read them yet
  }

  // How many logged curves differ from the ones computed in order.
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> logged(steps * kThresholds), safe(steps * kThresholds);
  CUDA_CHECK(cudaMemcpy(logged.data(), d_logged, logged.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(safe.data(), d_safe, safe.size() * sizeof(float), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int s = 0; s < steps; ++s) {
    bool same = true;
    for (int t = 0; t < kThresholds; ++t) same = same && logged[s * kThresholds + t] == safe[s * kThresholds + t];
    wrong += !same;
  }
  if (wrong > 0)
    std::printf("symptom: %d of %d logged curves were computed from memory the next step had reused\n", wrong, steps);
  else std::printf("all %d logged curves match the ones computed in order\n", steps);

  CUDA_CHECK(cudaEventDestroy(stepped));
  CUDA_CHECK(cudaStreamDestroy(metrics));
  CUDA_CHECK(cudaStreamDestroy(train));
  CUDA_CHECK(cudaFree(d_safe));
  CUDA_CHECK(cudaFree(d_logged));
  CUDA_CHECK(cudaFree(d_grad));
  CUDA_CHECK(cudaFree(d_w));
  CUDA_CHECK(cudaFree(d_y));
  CUDA_CHECK(cudaFree(d_x));
  return 0;
}

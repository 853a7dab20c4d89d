// unsynced-transfer (GD003), CUDA, fixed: the predictions still come back
// with cudaMemcpyAsync into pinned memory, but the host synchronises the
// stream before it reads them (buggy.cu reads at once).
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "../common/cuda_check.h"
#include "../common/batch_head.cuh"

int main() {
  std::vector<float> x(kImages / kBatch * 3 * kPixels), y(kImages / kBatch * kPixels);
  make_batches(x.data(), y.data());
  float *d_x = nullptr, *d_y = nullptr, *d_w = nullptr, *d_grad = nullptr, *d_logits = nullptr, *h_pred = nullptr;
  CUDA_CHECK(cudaMalloc(&d_x, x.size() * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_y, y.size() * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_w, 4 * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_grad, 4 * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_logits, kPixels * sizeof(float)));
  CUDA_CHECK(cudaMallocHost(&h_pred, kPixels * sizeof(float)));
  // The dataset fits on the GPU.
  CUDA_CHECK(cudaMemcpy(d_x, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_y, y.data(), y.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(d_w, 0, 4 * sizeof(float)));
  CUDA_CHECK(cudaMemset(d_grad, 0, 4 * sizeof(float)));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  const int blocks = (kPixels + 255) / 256, batches = kImages / kBatch;
  for (int step = 0; step < 20 * batches; ++step) {
    const float* bx = d_x + step % batches * 3 * kPixels;
    const float* by = d_y + step % batches * kPixels;
    forward<<<blocks, 256, 0, stream>>>(bx, d_w, d_logits, kPixels);
    backward<<<blocks, 256, 0, stream>>>(bx, d_logits, by, d_grad, kPixels);
    sgd<<<1, 4, 0, stream>>>(d_w, d_grad, 2.0f);
    CUDA_CHECK(cudaGetLastError());
  }

  // Validation on the first batch: the predictions come back asynchronously.
  forward<<<blocks, 256, 0, stream>>>(d_x, d_w, d_logits, kPixels);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaMemcpyAsync(h_pred, d_logits, kPixels * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));  // the copy has landed
  std::vector<float> early(kPixels);
  double inter = 0, uni = 0;
  for (int i = 0; i < kPixels; ++i) {
    early[i] = h_pred[i];
    const float p = early[i] > 0.0f ? 1.0f : 0.0f;
    inter += p * y[i];
    uni += p + y[i] - p * y[i];
  }
  std::printf("val IoU %.3f\n", uni > 0 ? inter / uni : 1.0);

  // What the copy really brought, once it has landed.
  CUDA_CHECK(cudaStreamSynchronize(stream));
  int stale = 0;
  for (int i = 0; i < kPixels; ++i) stale += !(early[i] == h_pred[i]);
  if (stale > 0) std::printf("symptom: %d of %d predictions were read before the copy landed\n", stale, kPixels);
  else std::printf("all %d predictions were read after the copy landed\n", kPixels);

  CUDA_CHECK(cudaStreamDestroy(stream));
  CUDA_CHECK(cudaFreeHost(h_pred));
  CUDA_CHECK(cudaFree(d_logits));
  CUDA_CHECK(cudaFree(d_grad));
  CUDA_CHECK(cudaFree(d_w));
  CUDA_CHECK(cudaFree(d_y));
  CUDA_CHECK(cudaFree(d_x));
  return 0;
}

// pageable-async-copy (GD009), CUDA: a per-pixel segmentation head (a 1x1
// convolution over the three channels) trained on synthetic discs, the
// dataset in host memory and each batch copied with cudaMemcpyAsync so that
// the copy overlaps the previous step. The dataset lives in a std::vector:
// pageable memory, which the copy engine cannot read later, so each
// "asynchronous" copy returns only once it is done, and with it the work
// queued before it: the host stalls every step instead of queuing the next.
// fixed.cu allocates the dataset pinned (cudaMallocHost).
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "../common/cuda_check.h"
#include "../common/batch_head.cuh"

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

int main() {
  const int blocks = (kPixels + 255) / 256, batches = kImages / kBatch, steps = 20 * batches;
  std::vector<float> images(batches * 3 * kPixels), masks(batches * kPixels);
  make_batches(images.data(), masks.data());
  float *d_x = nullptr, *d_y = nullptr, *d_w = nullptr, *d_grad = nullptr, *d_logits = nullptr;
  CUDA_CHECK(cudaMalloc(&d_x, 3 * kPixels * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_y, kPixels * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_w, 4 * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_grad, 4 * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_logits, kPixels * sizeof(float)));
  CUDA_CHECK(cudaMemset(d_w, 0, 4 * sizeof(float)));
  CUDA_CHECK(cudaMemset(d_grad, 0, 4 * sizeof(float)));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  double in_copies = 0;  // host time spent in the copy calls
  const auto loop = Clock::now();
  for (int step = 0; step < steps; ++step) {
    const int b = step % batches;
    const auto start = Clock::now();
    CUDA_CHECK(cudaMemcpyAsync(d_x, images.data() + b * 3 * kPixels, 3 * kPixels * sizeof(float), cudaMemcpyHostToDevice,
                               stream));
    CUDA_CHECK(cudaMemcpyAsync(d_y, masks.data() + b * kPixels, kPixels * sizeof(float), cudaMemcpyHostToDevice,
                               stream));
    in_copies += ms_since(start);
    forward<<<blocks, 256, 0, stream>>>(d_x, d_w, d_logits, kPixels);
    backward<<<blocks, 256, 0, stream>>>(d_x, d_logits, d_y, d_grad, kPixels);
    sgd<<<1, 4, 0, stream>>>(d_w, d_grad, 2.0f);
    CUDA_CHECK(cudaGetLastError());
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));

  const double total = ms_since(loop), share = in_copies / total;
  std::printf("%d steps in %.1f ms; the asynchronous batch copies held the host %.1f ms of it (%.0f%%)\n", steps, total,
              in_copies, 100 * share);
  if (share > 0.25) std::printf("symptom: the asynchronous copies blocked the host for most of the training loop\n");

  CUDA_CHECK(cudaStreamDestroy(stream));
  CUDA_CHECK(cudaFree(d_logits));
  CUDA_CHECK(cudaFree(d_grad));
  CUDA_CHECK(cudaFree(d_w));
  CUDA_CHECK(cudaFree(d_y));
  CUDA_CHECK(cudaFree(d_x));
  return 0;
}

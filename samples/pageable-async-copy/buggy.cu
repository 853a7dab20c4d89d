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
#include <cstdlib>
#include <vector>

#define CUDA_CHECK(call)                                                                     \
  do {                                                                                       \
    cudaError_t status_ = (call);                                                            \
    if (status_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(status_)); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

constexpr int kSize = 32, kImages = 128, kBatch = 16, kPixels = kBatch * kSize * kSize;

// Noisy images with a bright disc, channel-major per batch; the mask is the disc.
void make_shapes(float* x, float* y) {
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

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

int main() {
  const int blocks = (kPixels + 255) / 256, batches = kImages / kBatch, steps = 20 * batches;
  std::vector<float> images(batches * 3 * kPixels), masks(batches * kPixels);
  make_shapes(images.data(), masks.data());
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

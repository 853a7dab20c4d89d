// unsynced-transfer (GD003), CUDA, fixed: the predictions still come back
// with cudaMemcpyAsync into pinned memory, but the host synchronises the
// stream before it reads them (buggy.cu reads at once).
#include <cuda_runtime.h>

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
void make_shapes(std::vector<float>& x, std::vector<float>& y) {
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

int main() {
  std::vector<float> x(kImages / kBatch * 3 * kPixels), y(kImages / kBatch * kPixels);
  make_shapes(x, y);
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

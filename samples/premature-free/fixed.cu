// premature-free (GD004), CUDA, fixed: the precision-recall curve still runs
// on the metrics stream, but the training stream waits for it (an event)
// before it frees the logits, as record_stream does in PyTorch, so the pool
// hands the block out again only once the curve has read it (buggy.cu frees
// at once).
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

constexpr int kSize = 32, kImages = 128, kBatch = 16, kPixels = kBatch * kSize * kSize, kThresholds = 256;

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
  make_shapes(x, y);
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
  cudaEvent_t stepped, read;
  CUDA_CHECK(cudaEventCreateWithFlags(&stepped, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&read, cudaEventDisableTiming));

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
    CUDA_CHECK(cudaEventRecord(read, metrics));  // the free waits until the metrics stream has read them
    CUDA_CHECK(cudaStreamWaitEvent(train, read));
    CUDA_CHECK(cudaFreeAsync(d_logits, train));
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

  CUDA_CHECK(cudaEventDestroy(read));
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

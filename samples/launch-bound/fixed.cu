// launch-bound (GD011), CUDA, fixed: each kernel covers the whole batch of
// 16 images, so a step is four launches whatever the batch size (buggy.cu
// launches three kernels per image).
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#define CUDA_CHECK(call)                                                                      \
  do {                                                                                        \
    cudaError_t status_ = (call);                                                             \
    if (status_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(status_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

constexpr int kSide = 32, kPixels = kSide * kSide, kImages = 256, kBatch = 16;
constexpr int kStepsPerEpoch = kImages / kBatch, kSteps = 2 * kStepsPerEpoch;

// Images (3 planes each) with one bright disc, and its mask.
void make_shapes(std::vector<float>& images, std::vector<float>& masks, int count, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  images.assign(static_cast<size_t>(count) * 3 * kPixels, 0.0f);
  masks.assign(static_cast<size_t>(count) * kPixels, 0.0f);
  for (int n = 0; n < count; ++n) {
    const float cx = u(gen) * kSide, cy = u(gen) * kSide, r = 3.0f + 6.0f * u(gen);
    for (int p = 0; p < kPixels; ++p) {
      const float dx = p % kSide - cx, dy = p / kSide - cy;
      const bool in = dx * dx + dy * dy < r * r;
      masks[static_cast<size_t>(n) * kPixels + p] = in ? 1.0f : 0.0f;
      for (int c = 0; c < 3; ++c) images[(static_cast<size_t>(n) * 3 + c) * kPixels + p] = (in ? 0.7f : 0.2f) + 0.3f * u(gen);
    }
  }
}

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

__global__ void sgd(float* w, float* grad, float lr) {
  w[threadIdx.x] -= lr * grad[threadIdx.x];
  grad[threadIdx.x] = 0.0f;
}

int main() {
  std::vector<float> images, masks;
  make_shapes(images, masks, kImages, 1);
  float *d_x = nullptr, *d_t = nullptr, *d_z = nullptr, *d_w = nullptr, *d_grad = nullptr, *d_loss = nullptr;
  CUDA_CHECK(cudaMalloc(&d_x, images.size() * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_t, masks.size() * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_z, kBatch * kPixels * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_w, 4 * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_grad, 4 * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_loss, sizeof(float)));
  CUDA_CHECK(cudaMemcpy(d_x, images.data(), images.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_t, masks.data(), masks.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(d_w, 0, 4 * sizeof(float)));
  CUDA_CHECK(cudaMemset(d_grad, 0, 4 * sizeof(float)));
  CUDA_CHECK(cudaMemset(d_loss, 0, sizeof(float)));

  const int n = kBatch * kPixels, threads = 256, blocks = (n + threads - 1) / threads;
  auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < kSteps; ++step) {
    const float* x = d_x + (step % kStepsPerEpoch) * kBatch * 3 * kPixels;
    const float* t = d_t + (step % kStepsPerEpoch) * kBatch * kPixels;
    forward<<<blocks, threads>>>(x, d_w, d_z, n);  // the whole batch in each launch
    CUDA_CHECK(cudaGetLastError());
    bce<<<blocks, threads>>>(d_z, t, d_loss, n, n);
    CUDA_CHECK(cudaGetLastError());
    weight_grad<<<blocks, threads>>>(x, d_z, d_grad, n);
    CUDA_CHECK(cudaGetLastError());
    sgd<<<1, 4>>>(d_w, d_grad, 5.0f);
    CUDA_CHECK(cudaGetLastError());
    if ((step + 1) % kStepsPerEpoch == 0) {  // the epoch's loss, read once per epoch
      float loss = 0.0f;
      CUDA_CHECK(cudaMemcpy(&loss, d_loss, sizeof(float), cudaMemcpyDeviceToHost));
      CUDA_CHECK(cudaMemset(d_loss, 0, sizeof(float)));
      const auto now = std::chrono::steady_clock::now();
      std::printf("epoch %d: train loss %.4f, %.1f us per step\n", (step + 1) / kStepsPerEpoch, loss / kStepsPerEpoch,
                  std::chrono::duration<double, std::micro>(now - start).count() / kStepsPerEpoch);
      start = std::chrono::steady_clock::now();
    }
  }
  CUDA_CHECK(cudaFree(d_x));
  CUDA_CHECK(cudaFree(d_t));
  CUDA_CHECK(cudaFree(d_z));
  CUDA_CHECK(cudaFree(d_w));
  CUDA_CHECK(cudaFree(d_grad));
  CUDA_CHECK(cudaFree(d_loss));
}

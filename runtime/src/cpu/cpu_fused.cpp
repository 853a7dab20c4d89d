// Fused kernels: one pass where the op-by-op composition would make several
// (and allocate temporaries): relu's gradient and the Adam update.
#include <algorithm>
#include <cmath>

#include "cpu/cpu_kernels.h"

namespace gdrt::cpu {
namespace {

constexpr std::int64_t kChunk = 1 << 14;

template <class Body>
void chunked(std::int64_t n, Body&& body) {
  const std::int64_t chunks = (n + kChunk - 1) / kChunk;
  parallel_for(chunks, chunks > 1, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) body(c * kChunk, std::min(n, (c + 1) * kChunk));
  });
}

GDRT_WIDE_SIMD void relu_backward_rows(const float* __restrict y, const float* __restrict dy, float* __restrict dx,
                                       std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = dy[i];  // loaded unconditionally, so the select vectorises
    dx[i] = y[i] > 0.0f ? g : 0.0f;
  }
}

GDRT_WIDE_SIMD void adam_rows(float* __restrict p, const float* __restrict grad, float* __restrict ma,
                              float* __restrict va, std::int64_t n, float b1, float one_b1, float b2, float one_b2,
                              float eps, float step, float bc2) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = grad[i];
    const float m = ma[i] * b1 + g * one_b1;
    const float v = va[i] * b2 + one_b2 * g * g;
    ma[i] = m;
    va[i] = v;
    p[i] -= step * (m / (std::sqrt(v) / bc2 + eps));
  }
}

}  // namespace

void CpuKernels::relu_backward(std::int64_t n, const float* y, const float* dy, float* dx) {
  chunked(n, [=](std::int64_t i0, std::int64_t i1) { relu_backward_rows(y + i0, dy + i0, dx + i0, i1 - i0); });
}

void CpuKernels::adam_update(std::int64_t n, float* param, const float* grad, float* exp_avg, float* exp_avg_sq,
                             const AdamUpdate& u) {
  const float b1 = static_cast<float>(u.beta1), b2 = static_cast<float>(u.beta2);
  const float one_b1 = static_cast<float>(1.0 - u.beta1), one_b2 = static_cast<float>(1.0 - u.beta2);
  const float eps = static_cast<float>(u.eps), step = static_cast<float>(u.step_size);
  const float bc2 = static_cast<float>(u.bias_correction2_sqrt);
  chunked(n, [=](std::int64_t i0, std::int64_t i1) {
    adam_rows(param + i0, grad + i0, exp_avg + i0, exp_avg_sq + i0, i1 - i0, b1, one_b1, b2, one_b2, eps, step, bc2);
  });
}

}  // namespace gdrt::cpu

// Fused kernels: one pass where the op-by-op composition would make several
// (and allocate temporaries): relu's gradient and the Adam update.
#include <algorithm>

#include "cpu/cpu_kernels.h"
#include "ops/scalar_elementwise.h"
#include "ops/scalar_optim.h"

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
  for (std::int64_t i = 0; i < n; ++i) dx[i] = scalar::relu_grad(y[i], dy[i]);
}

GDRT_WIDE_SIMD void adam_rows(float* __restrict p, const float* __restrict grad, float* __restrict ma,
                              float* __restrict va, std::int64_t n, const scalar::AdamScalars s) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) scalar::adam_update(p[i], grad[i], ma[i], va[i], s);
}

}  // namespace

void CpuKernels::relu_backward(std::int64_t n, const float* y, const float* dy, float* dx) {
  chunked(n, [=](std::int64_t i0, std::int64_t i1) { relu_backward_rows(y + i0, dy + i0, dx + i0, i1 - i0); });
}

void CpuKernels::adam_update(std::int64_t n, float* param, const float* grad, float* exp_avg, float* exp_avg_sq,
                             const AdamUpdate& u) {
  const scalar::AdamScalars s = scalar::adam_scalars(u);
  chunked(n, [=](std::int64_t i0, std::int64_t i1) {
    adam_rows(param + i0, grad + i0, exp_avg + i0, exp_avg_sq + i0, i1 - i0, s);
  });
}

}  // namespace gdrt::cpu

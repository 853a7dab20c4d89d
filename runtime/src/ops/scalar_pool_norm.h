// Max pooling and batch normalisation (NCHW, f32). Pooling picks a window's
// first maximum and propagates NaN (the window's last NaN wins). Batch norm
// takes a channel's statistics in double from the sums a kernel gathers,
// and its per-element passes run in float.
#pragma once

#include <cmath>
#include <cstdint>

#include "gdrt/kernel_op.h"
#include "ops/host_device.h"

namespace gdrt::scalar {

// Whether v replaces the best of a window so far: larger, or NaN.
GDRT_HOST_DEVICE inline bool pool_takes(float v, float best) { return v > best || v != v; }

struct PoolPick {
  float value;
  std::int64_t index;  // in the plane; -1 when the window holds only padding
};

// The pick of output (oy, ox) over one input plane.
GDRT_HOST_DEVICE inline PoolPick max_pool_window(const PoolGeometry& g, const float* plane, std::int64_t oy,
                                                 std::int64_t ox) {
  PoolPick best{-INFINITY, -1};
  for (std::int64_t i = 0; i < g.kernel_h; ++i) {
    const std::int64_t iy = oy * g.stride_h - g.pad_h + i;
    if (iy < 0 || iy >= g.in_h) continue;
    for (std::int64_t j = 0; j < g.kernel_w; ++j) {
      const std::int64_t ix = ox * g.stride_w - g.pad_w + j;
      if (ix < 0 || ix >= g.in_w) continue;
      const float v = plane[iy * g.in_w + ix];
      if (best.index < 0 || pool_takes(v, best.value)) best = {v, iy * g.in_w + ix};
    }
  }
  return best;
}

struct BatchNormStats {
  double mean, var, invstd;  // var is biased (divided by the count)
};

GDRT_HOST_DEVICE inline double batch_norm_invstd(double var, double eps) { return 1.0 / std::sqrt(var + eps); }

// From a channel's sum and sum of squares over `count` elements. One pass
// in double: the cancellation in E[x^2] - E[x]^2 stays far below float
// resolution, and the clamp at 0 catches what is left.
GDRT_HOST_DEVICE inline BatchNormStats batch_norm_stats(double sum, double sum_sq, std::int64_t count, double eps) {
  const double mean = sum / static_cast<double>(count);
  const double spread = sum_sq / static_cast<double>(count) - mul_rn(mean, mean);
  const double var = 0.0 < spread ? spread : 0.0;
  return {mean, var, batch_norm_invstd(var, eps)};
}

GDRT_HOST_DEVICE inline float running_average(float running, double momentum, double batch) {
  return static_cast<float>(mul_rn(1 - momentum, static_cast<double>(running)) + mul_rn(momentum, batch));
}

// What training keeps of channel ch's statistics: mean and invstd for the
// backward pass, and the running mean and unbiased variance (either may be
// null).
GDRT_HOST_DEVICE inline void batch_norm_keep_stats(std::int64_t ch, const BatchNormStats& s, std::int64_t count,
                                                   double momentum, float* save_mean, float* save_invstd,
                                                   float* running_mean, float* running_var) {
  save_mean[ch] = static_cast<float>(s.mean);
  save_invstd[ch] = static_cast<float>(s.invstd);
  if (running_mean) running_mean[ch] = running_average(running_mean[ch], momentum, s.mean);
  if (running_var) {
    const double unbiased = count > 1 ? s.var * static_cast<double>(count) / static_cast<double>(count - 1) : s.var;
    running_var[ch] = running_average(running_var[ch], momentum, unbiased);
  }
}

// y = x * scale + shift is (x - mean) * invstd * w + b, with scale and shift
// folded in double from the unrounded statistics (w, b may be null).
struct BatchNormAffine {
  float scale, shift;
};
GDRT_HOST_DEVICE inline BatchNormAffine batch_norm_affine(double mean, double invstd, const float* w, const float* b,
                                                          std::int64_t ch) {
  const float wc = w ? w[ch] : 1.0f;
  const float bc = b ? b[ch] : 0.0f;
  return {static_cast<float>(invstd * wc), static_cast<float>(bc - mul_rn(mean * invstd, static_cast<double>(wc)))};
}
GDRT_HOST_DEVICE inline float batch_norm_apply(float x, float scale, float shift) { return mul_rn(x, scale) + shift; }

// Backward sums over a channel: dy and dy * (x - mean), in double.
GDRT_HOST_DEVICE inline double batch_norm_centered_grad(float dy, float x, float mean) {
  return mul_rn(static_cast<double>(dy), static_cast<double>(x - mean));
}

// A channel's gradients from those sums: dw = sum(dy * xhat), db = sum(dy),
// and the factors of dx (batch_norm_grad_input). Training:
// dx = w*invstd/M * (M*dy - sum(dy) - xhat*sum(dy*xhat)); eval: dx = w*invstd*dy.
struct BatchNormGrads {
  float dw, db, k1, mean_dy, mean_dyx;
};
GDRT_HOST_DEVICE inline BatchNormGrads batch_norm_grads(double sum_dy, double sum_dy_centered, float invstd,
                                                        const float* w, std::int64_t ch, bool training,
                                                        std::int64_t count) {
  const double sum_dy_xhat = sum_dy_centered * invstd;
  const double n = static_cast<double>(count);
  return {static_cast<float>(sum_dy_xhat), static_cast<float>(sum_dy), (w ? w[ch] : 1.0f) * invstd,
          training ? static_cast<float>(sum_dy / n) : 0.0f, training ? static_cast<float>(sum_dy_xhat / n) : 0.0f};
}
GDRT_HOST_DEVICE inline float batch_norm_grad_input(float dy, float x, float mean, float invstd, float k1,
                                                    float mean_dy, float mean_dyx) {
  return k1 * (dy - mean_dy - mul_rn((x - mean) * invstd, mean_dyx));
}

}  // namespace gdrt::scalar

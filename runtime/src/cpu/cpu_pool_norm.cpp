// Max pooling and batch normalisation (NCHW, f32), parallel over planes or
// channels; statistics accumulate in double.
#include <algorithm>

#include "cpu/cpu_kernels.h"
#include "ops/scalar_elementwise.h"
#include "ops/scalar_pool_norm.h"

namespace gdrt::cpu {

namespace {

// The UNet's pooling (2x2, stride 2, no padding): no bounds tests, the four
// taps in the generic loop's order, so ties and NaNs pick the same element.
void max_pool_2x2(const PoolGeometry& g, const float* x, float* y, std::int32_t* argmax) {
  parallel_for(g.batch * g.channels, true, [&](std::int64_t pl0, std::int64_t pl1) {
    for (std::int64_t pl = pl0; pl < pl1; ++pl) {
      const float* xp = x + pl * g.in_h * g.in_w;
      float* yp = y + pl * g.out_h * g.out_w;
      std::int32_t* ap = argmax + pl * g.out_h * g.out_w;
      for (std::int64_t oy = 0; oy < g.out_h; ++oy) {
        const float* __restrict r0 = xp + 2 * oy * g.in_w;
        const float* __restrict r1 = r0 + g.in_w;
        float* __restrict yr = yp + oy * g.out_w;
        std::int32_t* __restrict ar = ap + oy * g.out_w;
        const auto base = static_cast<std::int32_t>(2 * oy * g.in_w);
        const auto w = static_cast<std::int32_t>(g.in_w);
        // Selects, not branches: the comparisons are data-dependent coin flips.
#pragma omp simd
        for (std::int64_t ox = 0; ox < g.out_w; ++ox) {
          const auto c = static_cast<std::int32_t>(2 * ox);
          const float v0 = r0[c], v1 = r0[c + 1], v2 = r1[c], v3 = r1[c + 1];
          float best = v0;
          std::int32_t where = base + c;
          bool take = scalar::pool_takes(v1, best);
          best = take ? v1 : best;
          where = take ? base + c + 1 : where;
          take = scalar::pool_takes(v2, best);
          best = take ? v2 : best;
          where = take ? base + w + c : where;
          take = scalar::pool_takes(v3, best);
          best = take ? v3 : best;
          where = take ? base + w + c + 1 : where;
          yr[ox] = best;
          ar[ox] = where;
        }
      }
    }
  });
}

}  // namespace

void CpuKernels::max_pool2d_forward(const PoolGeometry& g, const float* x, float* y, std::int32_t* argmax) {
  if (g.kernel_h == 2 && g.kernel_w == 2 && g.stride_h == 2 && g.stride_w == 2 && g.pad_h == 0 && g.pad_w == 0) {
    max_pool_2x2(g, x, y, argmax);
    return;
  }
  const std::int64_t planes = g.batch * g.channels;
parallel_for(planes, true, [&](std::int64_t pl0, std::int64_t pl1) {
  for (std::int64_t pl = pl0; pl < pl1; ++pl) {
    const float* xp = x + pl * g.in_h * g.in_w;
    float* yp = y + pl * g.out_h * g.out_w;
    std::int32_t* ap = argmax + pl * g.out_h * g.out_w;
    for (std::int64_t oy = 0; oy < g.out_h; ++oy)
      for (std::int64_t ox = 0; ox < g.out_w; ++ox) {
        const scalar::PoolPick pick = scalar::max_pool_window(g, xp, oy, ox);
        yp[oy * g.out_w + ox] = pick.value;
        ap[oy * g.out_w + ox] = static_cast<std::int32_t>(pick.index);
      }
  }
  });
}

void CpuKernels::max_pool2d_backward(const PoolGeometry& g, const float* dy, const std::int32_t* argmax, float* dx) {
  const std::int64_t planes = g.batch * g.channels, in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
parallel_for(planes, true, [&](std::int64_t pl0, std::int64_t pl1) {
  for (std::int64_t pl = pl0; pl < pl1; ++pl) {
    float* dxp = dx + pl * in_plane;
    for (std::int64_t i = 0; i < in_plane; ++i) dxp[i] = 0;
    for (std::int64_t o = 0; o < out_plane; ++o) {
      const std::int32_t a = argmax[pl * out_plane + o];
      if (a >= 0) dxp[a] += dy[pl * out_plane + o];
    }
  }
  });
}

namespace {

// Sum and sum of squares of one row, in double vector lanes.
GDRT_WIDE_SIMD void row_sums(const float* __restrict p, std::int64_t n, double* sum, double* sum_sq) {
  double s = 0, ss = 0;
#pragma omp simd reduction(+ : s, ss)
  for (std::int64_t k = 0; k < n; ++k) {
    const double v = p[k];
    s += v;
    ss += scalar::square(v);
  }
  *sum += s;
  *sum_sq += ss;
}

// q = p * scale + shift, then max(q, 0) if `relu` (NaN gives 0, as the relu kernel).
GDRT_WIDE_SIMD void row_affine(const float* __restrict p, float* __restrict q, std::int64_t n, float scale, float shift,
                               bool relu) {
  if (relu) {
#pragma omp simd
    for (std::int64_t k = 0; k < n; ++k) q[k] = scalar::relu(scalar::batch_norm_apply(p[k], scale, shift));
  } else {
#pragma omp simd
    for (std::int64_t k = 0; k < n; ++k) q[k] = scalar::batch_norm_apply(p[k], scale, shift);
  }
}

// The upstream gradient of a row: dy, or 0 where the fused relu's output
// r is not positive (a select on floats: written inside the double sums
// GCC turned it into a mispredicted branch).
GDRT_WIDE_SIMD void row_grad(const float* __restrict g, const float* __restrict r, std::int64_t n, float* __restrict out) {
#pragma omp simd
  for (std::int64_t k = 0; k < n; ++k) out[k] = scalar::relu_grad(r[k], g[k]);
}

// sum(g) and sum(g * (p - m)) of a row, in double lanes.
GDRT_WIDE_SIMD void row_grad_sums(const float* __restrict g, const float* __restrict p, std::int64_t n, float m,
                                  double* sum_g, double* sum_gx) {
  double a = 0, b = 0;
#pragma omp simd reduction(+ : a, b)
  for (std::int64_t k = 0; k < n; ++k) {
    a += static_cast<double>(g[k]);
    b += scalar::batch_norm_centered_grad(g[k], p[k], m);
  }
  *sum_g += a;
  *sum_gx += b;
}

// dx of a row (scalar::batch_norm_grad_input).
GDRT_WIDE_SIMD void row_grad_input(const float* __restrict g, const float* __restrict p, float* __restrict q,
                                   std::int64_t n, float k1, float mean_dy, float m, float is, float mean_dyx) {
#pragma omp simd
  for (std::int64_t k = 0; k < n; ++k)
    q[k] = scalar::batch_norm_grad_input(g[k], p[k], m, is, k1, mean_dy, mean_dyx);
}

constexpr std::int64_t kBlock = 1024;  // rows are masked block by block into a stack buffer

void batch_norm_backward_channels(std::int64_t n, std::int64_t c, std::int64_t hw, const float* x, const float* dy,
                                  const float* w, const float* mean, const float* invstd, bool training,
                                  const float* relu_out, float* dx, float* dw, float* db) {
  parallel_for(c, true, [&](std::int64_t ch0, std::int64_t ch1) {
    float masked[kBlock];
    // Visits the channel's rows in blocks with the relu mask already applied to dy.
    auto for_each_block = [&](std::int64_t ch, auto&& body) {
      for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t at = (i * c + ch) * hw;
        for (std::int64_t k0 = 0; k0 < hw; k0 += kBlock) {
          const std::int64_t len = std::min(kBlock, hw - k0);
          const float* g = dy + at + k0;
          if (relu_out) row_grad(g, relu_out + at + k0, len, masked), g = masked;
          body(g, at + k0, len);
        }
      }
    };
    for (std::int64_t ch = ch0; ch < ch1; ++ch) {
      const float m = mean[ch], is = invstd[ch];
      double sum_dy = 0, sum_dy_centered = 0;
      for_each_block(ch, [&](const float* g, std::int64_t at, std::int64_t len) {
        row_grad_sums(g, x + at, len, m, &sum_dy, &sum_dy_centered);
      });
      const scalar::BatchNormGrads f = scalar::batch_norm_grads(sum_dy, sum_dy_centered, is, w, ch, training, n * hw);
      if (dw) dw[ch] = f.dw;
      if (db) db[ch] = f.db;
      if (!dx) continue;
      for_each_block(ch, [&](const float* g, std::int64_t at, std::int64_t len) {
        row_grad_input(g, x + at, dx + at, len, f.k1, f.mean_dy, m, is, f.mean_dyx);
      });
    }
  });
}

}  // namespace

void CpuKernels::batch_norm_train(std::int64_t n, std::int64_t c, std::int64_t hw, const float* x, const float* w,
                                  const float* b, float* running_mean, float* running_var, double momentum, double eps,
                                  float* y, float* save_mean, float* save_invstd, bool relu) {
  const std::int64_t count = n * hw;
  parallel_for(c, true, [&](std::int64_t ch0, std::int64_t ch1) {
    for (std::int64_t ch = ch0; ch < ch1; ++ch) {
      // One pass for sum and sum of squares, in double vector lanes.
      double s = 0, ss = 0;
      for (std::int64_t i = 0; i < n; ++i) row_sums(x + (i * c + ch) * hw, hw, &s, &ss);
      const scalar::BatchNormStats st = scalar::batch_norm_stats(s, ss, count, eps);
      scalar::batch_norm_keep_stats(ch, st, count, momentum, save_mean, save_invstd, running_mean, running_var);
      const scalar::BatchNormAffine a = scalar::batch_norm_affine(st.mean, st.invstd, w, b, ch);
      for (std::int64_t i = 0; i < n; ++i)
        row_affine(x + (i * c + ch) * hw, y + (i * c + ch) * hw, hw, a.scale, a.shift, relu);
    }
  });
}

void CpuKernels::batch_norm_eval(std::int64_t n, std::int64_t c, std::int64_t hw, const float* x, const float* w,
                                 const float* b, const float* running_mean, const float* running_var, double eps,
                                 float* y, bool relu) {
  parallel_for(c, true, [&](std::int64_t ch0, std::int64_t ch1) {
    for (std::int64_t ch = ch0; ch < ch1; ++ch) {
      const double invstd = scalar::batch_norm_invstd(running_var[ch], eps);
      const scalar::BatchNormAffine a = scalar::batch_norm_affine(running_mean[ch], invstd, w, b, ch);
      for (std::int64_t i = 0; i < n; ++i)
        row_affine(x + (i * c + ch) * hw, y + (i * c + ch) * hw, hw, a.scale, a.shift, relu);
    }
  });
}

void CpuKernels::batch_norm_backward(std::int64_t n, std::int64_t c, std::int64_t hw, const float* x, const float* dy,
                                     const float* w, const float* mean, const float* invstd, bool training,
                                     const float* relu_out, float* dx, float* dw, float* db) {
  batch_norm_backward_channels(n, c, hw, x, dy, w, mean, invstd, training, relu_out, dx, dw, db);
}

}  // namespace gdrt::cpu

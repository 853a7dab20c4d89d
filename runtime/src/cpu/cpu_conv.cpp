// Convolutions as im2col + OpenBLAS SGEMM, one image at a time, so the
// column buffer (thread-local, grown once) stays cache-sized. The fallback
// when oneDNN cannot take a geometry, and the reference it is measured against.
#include <cblas.h>

#include <cstring>
#include <vector>

#include "cpu/conv_impl.h"

namespace gdrt::cpu {
namespace {

thread_local std::vector<float> t_columns;

float* columns(std::size_t n) {
  if (t_columns.size() < n) t_columns.resize(n);
  return t_columns.data();
}

bool is_pointwise(const ConvGeometry& g) {
  return g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 && g.pad_w == 0;
}

// cols[(c*kh + i)*kw + j][oy*ow + ox] = x[c][oy*s - p + i*d][ox*s - p + j*d] (0 outside).
void im2col(const ConvGeometry& g, const float* x, float* cols) {
  const std::int64_t rows = g.in_channels * g.kernel_h * g.kernel_w, plane = g.out_h * g.out_w;
  parallel_for(rows, rows * plane > (1 << 14), [&](std::int64_t r0, std::int64_t r1) {
  for (std::int64_t r = r0; r < r1; ++r) {
    const std::int64_t c = r / (g.kernel_h * g.kernel_w), i = (r / g.kernel_w) % g.kernel_h, j = r % g.kernel_w;
    const float* xc = x + c * g.in_h * g.in_w;
    float* out = cols + r * plane;
    for (std::int64_t oy = 0; oy < g.out_h; ++oy) {
      const std::int64_t iy = oy * g.stride_h - g.pad_h + i * g.dilation_h;
      float* orow = out + oy * g.out_w;
      if (iy < 0 || iy >= g.in_h) {
        std::memset(orow, 0, sizeof(float) * static_cast<std::size_t>(g.out_w));
        continue;
      }
      const float* xrow = xc + iy * g.in_w;
      const std::int64_t shift = j * g.dilation_w - g.pad_w;
      if (g.stride_w == 1) {
        const std::int64_t lo = std::max<std::int64_t>(0, -shift), hi = std::min(g.out_w, g.in_w - shift);
        for (std::int64_t ox = 0; ox < lo && ox < g.out_w; ++ox) orow[ox] = 0;
        if (hi > lo) std::memcpy(orow + lo, xrow + lo + shift, sizeof(float) * static_cast<std::size_t>(hi - lo));
        for (std::int64_t ox = std::max(hi, lo); ox < g.out_w; ++ox) orow[ox] = 0;
      } else {
        for (std::int64_t ox = 0; ox < g.out_w; ++ox) {
          const std::int64_t ix = ox * g.stride_w + shift;
          orow[ox] = (ix >= 0 && ix < g.in_w) ? xrow[ix] : 0.0f;
        }
      }
    }
  }
  });
}

// The adjoint of im2col: accumulates columns back into an image (dx).
void col2im(const ConvGeometry& g, const float* cols, float* x) {
  const std::int64_t plane = g.out_h * g.out_w, kk = g.kernel_h * g.kernel_w;
  std::memset(x, 0, sizeof(float) * static_cast<std::size_t>(g.in_channels * g.in_h * g.in_w));
  // Parallel over channels: each thread owns whole input planes.
  parallel_for(g.in_channels, g.in_channels * kk * plane > (1 << 14), [&](std::int64_t c0, std::int64_t c1) {
  for (std::int64_t c = c0; c < c1; ++c) {
    float* xc = x + c * g.in_h * g.in_w;
    for (std::int64_t k = 0; k < kk; ++k) {
      const std::int64_t i = k / g.kernel_w, j = k % g.kernel_w;
      const float* col = cols + (c * kk + k) * plane;
      for (std::int64_t oy = 0; oy < g.out_h; ++oy) {
        const std::int64_t iy = oy * g.stride_h - g.pad_h + i * g.dilation_h;
        if (iy < 0 || iy >= g.in_h) continue;
        float* xrow = xc + iy * g.in_w;
        const float* crow = col + oy * g.out_w;
        const std::int64_t shift = j * g.dilation_w - g.pad_w;
        for (std::int64_t ox = 0; ox < g.out_w; ++ox) {
          const std::int64_t ix = ox * g.stride_w + shift;
          if (ix >= 0 && ix < g.in_w) xrow[ix] += crow[ox];
        }
      }
    }
  }
  });
}

void sgemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const float* a, const float* b,
           float beta, float* c) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), 1.0f, a, static_cast<blasint>(ta ? m : k), b,
              static_cast<blasint>(tb ? k : n), beta, c, static_cast<blasint>(n));
}

}  // namespace

void im2col_conv2d_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y) {
  const std::int64_t ck = g.in_channels * g.kernel_h * g.kernel_w, plane = g.out_h * g.out_w;
  float* cols = is_pointwise(g) ? nullptr : columns(static_cast<std::size_t>(ck * plane));
  for (std::int64_t n = 0; n < g.batch; ++n) {
    const float* xn = x + n * g.in_channels * g.in_h * g.in_w;
    float* yn = y + n * g.out_channels * plane;
    if (cols) im2col(g, xn, cols);
    sgemm(false, false, g.out_channels, plane, ck, w, cols ? cols : xn, 0.0f, yn);  // y[O,P] = W[O,CK] cols[CK,P]
    if (bias) {
      parallel_for(g.out_channels, g.out_channels * plane > (1 << 15), [&](std::int64_t o0, std::int64_t o1) {
        for (std::int64_t o = o0; o < o1; ++o)
          for (std::int64_t p = 0; p < plane; ++p) yn[o * plane + p] += bias[o];
      });
    }
  }
}

void im2col_conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w, float* dx) {
  const std::int64_t ck = g.in_channels * g.kernel_h * g.kernel_w, plane = g.out_h * g.out_w;
  const bool direct = is_pointwise(g);
  float* cols = direct ? nullptr : columns(static_cast<std::size_t>(ck * plane));
  for (std::int64_t n = 0; n < g.batch; ++n) {
    float* dxn = dx + n * g.in_channels * g.in_h * g.in_w;
    const float* dyn = dy + n * g.out_channels * plane;
    sgemm(true, false, ck, plane, g.out_channels, w, dyn, 0.0f, direct ? dxn : cols);  // cols = W^T dy
    if (!direct) col2im(g, cols, dxn);
  }
}

void im2col_conv2d_backward_weight(const ConvGeometry& g, const float* x, const float* dy, float* dw, float* db) {
  const std::int64_t ck = g.in_channels * g.kernel_h * g.kernel_w, plane = g.out_h * g.out_w;
  float* cols = is_pointwise(g) ? nullptr : columns(static_cast<std::size_t>(ck * plane));
  for (std::int64_t n = 0; n < g.batch; ++n) {
    const float* xn = x + n * g.in_channels * g.in_h * g.in_w;
    const float* dyn = dy + n * g.out_channels * plane;
    if (cols) im2col(g, xn, cols);
    sgemm(false, true, g.out_channels, ck, plane, dyn, cols ? cols : xn, n == 0 ? 0.0f : 1.0f, dw);  // dW += dy cols^T
  }
  if (db) {
    parallel_for(g.out_channels, true, [&](std::int64_t o0, std::int64_t o1) {
    for (std::int64_t o = o0; o < o1; ++o) {
      double s = 0;
      for (std::int64_t n = 0; n < g.batch; ++n) {
        const float* p = dy + (n * g.out_channels + o) * plane;
        float part = 0;
        for (std::int64_t i = 0; i < plane; ++i) part += p[i];
        s += part;
      }
      db[o] = static_cast<float>(s);
    }
    });
  }
}

}  // namespace gdrt::cpu

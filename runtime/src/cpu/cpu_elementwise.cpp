// Fill, copy/convert, unary, binary and random kernels on host memory.
#include <cstring>

#include "cpu/cpu_kernels.h"
#include "ops/dtype_dispatch.h"
#include "ops/scalar_convert.h"
#include "ops/scalar_elementwise.h"

namespace gdrt::cpu {

void CpuKernels::fill(const TensorView& out, double value) {
  std::array<const std::vector<std::int64_t>*, 1> st{&out.strides};
  for_each_row<1>(out.sizes, st, [&](auto off, std::int64_t n, auto inner) {
    for (std::int64_t i = 0; i < n; ++i) scalar::store_double(out.data, out.dtype, off[0] + i * inner[0], value);
  });
}

void CpuKernels::copy(const TensorView& out, const TensorView& in) {
  std::array<const std::vector<std::int64_t>*, 2> st{&out.strides, &in.strides};
  if (out.dtype == in.dtype) {
    auto typed = [&](auto zero) {
      using T = decltype(zero);
      T* d = static_cast<T*>(out.data);
      const T* s = static_cast<const T*>(in.data);
      for_each_row<2>(out.sizes, st, [&](auto off, std::int64_t n, auto inner) {
        if (inner[0] == 1 && inner[1] == 1) {
          std::memcpy(d + off[0], s + off[1], static_cast<std::size_t>(n) * sizeof(T));
        } else if (inner[1] == 0) {  // broadcast source (e.g. expanded gradients)
          const T v = s[off[1]];
          for (std::int64_t i = 0; i < n; ++i) d[off[0] + i * inner[0]] = v;
        } else {
          for (std::int64_t i = 0; i < n; ++i) d[off[0] + i * inner[0]] = s[off[1] + i * inner[1]];
        }
      });
    };
    switch (itemsize(out.dtype)) {
      case 1: typed(std::uint8_t{}); break;
      case 2: typed(std::uint16_t{}); break;
      case 4: typed(std::uint32_t{}); break;
      default: typed(std::uint64_t{}); break;
    }
    return;
  }
  for_each_row<2>(out.sizes, st, [&](auto off, std::int64_t n, auto inner) {
    for (std::int64_t i = 0; i < n; ++i)
      scalar::store_double(out.data, out.dtype, off[0] + i * inner[0],
                           scalar::load_double(in.data, in.dtype, off[1] + i * inner[1]));
  });
}

namespace {

// One pass over out/in with the element function inlined (the op switch is
// hoisted out of the loop so the compiler can vectorise it).
template <class T, class F>
void unary_loop(const TensorView& out, const TensorView& in, F f) {
  std::array<const std::vector<std::int64_t>*, 2> st{&out.strides, &in.strides};
  T* o = static_cast<T*>(out.data);
  const T* x = static_cast<const T*>(in.data);
  for_each_row<2>(out.sizes, st, [&](auto off, std::int64_t n, auto inner) {
    T* po = o + off[0];
    const T* px = x + off[1];
    if (inner[0] == 1 && inner[1] == 1) {
      for (std::int64_t i = 0; i < n; ++i) po[i] = f(px[i]);
    } else {
      for (std::int64_t i = 0; i < n; ++i) po[i * inner[0]] = f(px[i * inner[1]]);
    }
  });
}

template <class T>
void unary_typed(UnaryOp op, const TensorView& out, const TensorView& in, T a) {
  switch (op) {
    case UnaryOp::relu: return unary_loop<T>(out, in, [](T v) { return scalar::relu(v); });
    case UnaryOp::positive: return unary_loop<T>(out, in, [](T v) { return scalar::positive(v); });
    case UnaryOp::neg: return unary_loop<T>(out, in, [](T v) { return scalar::neg(v); });
    case UnaryOp::square: return unary_loop<T>(out, in, [](T v) { return scalar::square(v); });
    case UnaryOp::leaky_relu: return unary_loop<T>(out, in, [a](T v) { return scalar::leaky_relu(v, a); });
    default: return unary_loop<T>(out, in, [op, a](T v) { return scalar::unary<T>(op, v, a); });
  }
}

template <class T, class F>
void binary_loop(const TensorView& out, const TensorView& a, const TensorView& b, F f) {
  std::array<const std::vector<std::int64_t>*, 3> st{&out.strides, &a.strides, &b.strides};
  T* o = static_cast<T*>(out.data);
  const T* pa = static_cast<const T*>(a.data);
  const T* pb = static_cast<const T*>(b.data);
  for_each_row<3>(out.sizes, st, [&](auto off, std::int64_t n, auto in) {
    T* po = o + off[0];
    const T* x = pa + off[1];
    const T* y = pb + off[2];
    if (in[0] == 1 && in[1] == 1 && in[2] == 1) {
      for (std::int64_t i = 0; i < n; ++i) po[i] = f(x[i], y[i]);
    } else if (in[0] == 1 && in[1] == 1 && in[2] == 0) {  // row against a broadcast scalar (bias, scalars)
      const T yv = y[0];
      for (std::int64_t i = 0; i < n; ++i) po[i] = f(x[i], yv);
    } else if (in[0] == 1 && in[1] == 0 && in[2] == 1) {
      const T xv = x[0];
      for (std::int64_t i = 0; i < n; ++i) po[i] = f(xv, y[i]);
    } else {
      for (std::int64_t i = 0; i < n; ++i) po[i * in[0]] = f(x[i * in[1]], y[i * in[2]]);
    }
  });
}

template <class T>
void binary_typed(BinaryOp op, const TensorView& out, const TensorView& a, const TensorView& b) {
  switch (op) {
    case BinaryOp::add: return binary_loop<T>(out, a, b, [](T x, T y) { return scalar::add(x, y); });
    case BinaryOp::sub: return binary_loop<T>(out, a, b, [](T x, T y) { return scalar::sub(x, y); });
    case BinaryOp::mul: return binary_loop<T>(out, a, b, [](T x, T y) { return scalar::mul(x, y); });
    case BinaryOp::div: return binary_loop<T>(out, a, b, [](T x, T y) { return scalar::div(x, y); });
    case BinaryOp::maximum: return binary_loop<T>(out, a, b, [](T x, T y) { return scalar::maximum(x, y); });
    default: return binary_loop<T>(out, a, b, [op](T x, T y) { return scalar::binary<T>(op, x, y); });
  }
}

}  // namespace

void CpuKernels::unary(UnaryOp op, const TensorView& out, const TensorView& in, double alpha) {
  GDRT_DTYPE_DISPATCH("cpu", in.dtype, T, unary_typed<T>(op, out, in, static_cast<T>(alpha)));
}

void CpuKernels::binary(BinaryOp op, const TensorView& out, const TensorView& a, const TensorView& b) {
  std::array<const std::vector<std::int64_t>*, 3> st{&out.strides, &a.strides, &b.strides};
  GDRT_DTYPE_DISPATCH("cpu", a.dtype, T, {
    const auto* pa = static_cast<const T*>(a.data);
    const auto* pb = static_cast<const T*>(b.data);
    if (scalar::is_comparison(op)) {
      auto* o = static_cast<std::uint8_t*>(out.data);
      for_each_row<3>(out.sizes, st, [&](auto off, std::int64_t n, auto in) {
        for (std::int64_t i = 0; i < n; ++i)
          o[off[0] + i * in[0]] = scalar::compare<T>(op, pa[off[1] + i * in[1]], pb[off[2] + i * in[2]]) ? 1 : 0;
      });
    } else {
      binary_typed<T>(op, out, a, b);
    }
  });
}

void CpuKernels::random(const TensorView& out, Distribution dist, std::uint64_t seed, std::uint64_t offset, double a,
                        double b) {
  // Element i (in row-major order of out) uses counter offset + i.
  const std::int64_t n = out.numel();
  std::vector<double> values(static_cast<std::size_t>(n));
  parallel_for(n, n > (1 << 15), [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) {
      const std::uint64_t counter = offset + static_cast<std::uint64_t>(i);
      values[static_cast<std::size_t>(i)] = scalar::random_draw(dist, seed, counter, a, b);
    }
  });
  TensorView src{values.data(), DType::f64, out.sizes, {}};
  std::int64_t st = 1;
  src.strides.resize(out.sizes.size());
  for (std::size_t i = out.sizes.size(); i-- > 0;) {
    src.strides[i] = st;
    st *= out.sizes[i];
  }
  copy(out, src);
}

}  // namespace gdrt::cpu

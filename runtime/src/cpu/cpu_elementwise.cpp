// Fill, copy/convert, unary, binary and random kernels on host memory.
#include <cmath>
#include <cstring>

#include "cpu/cpu_kernels.h"
#include "ops/dtype_dispatch.h"
#include "ops/scalar_convert.h"

namespace gdrt::cpu {
namespace {

using scalar::load_double;
using scalar::store_double;

template <class T>
T apply_unary(UnaryOp op, T x, T alpha) {
  switch (op) {
    case UnaryOp::neg: return -x;
    case UnaryOp::exp: return std::exp(x);
    case UnaryOp::log: return std::log(x);
    case UnaryOp::log1p: return std::log1p(x);
    case UnaryOp::abs: return std::abs(x);
    case UnaryOp::sqrt: return std::sqrt(x);
    case UnaryOp::rsqrt: return T(1) / std::sqrt(x);
    case UnaryOp::square: return x * x;
    case UnaryOp::reciprocal: return T(1) / x;
    case UnaryOp::relu: return x > T(0) ? x : T(0);
    case UnaryOp::leaky_relu: return x > T(0) ? x : x * alpha;
    case UnaryOp::sigmoid: return T(1) / (T(1) + std::exp(-x));
    case UnaryOp::tanh: return std::tanh(x);
    case UnaryOp::sign: return T((x > T(0)) - (x < T(0)));
    case UnaryOp::floor: return std::floor(x);
    case UnaryOp::round: return std::nearbyint(x);  // half to even, as PyTorch
    case UnaryOp::positive: return x > T(0) ? T(1) : T(0);
  }
  return x;
}

template <class T>
T apply_binary(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::add: return a + b;
    case BinaryOp::sub: return a - b;
    case BinaryOp::mul: return a * b;
    case BinaryOp::div: return a / b;
    case BinaryOp::maximum: return a > b ? a : b;
    case BinaryOp::minimum: return a < b ? a : b;
    case BinaryOp::pow: return static_cast<T>(std::pow(a, b));
    case BinaryOp::gt: return a > b;
    case BinaryOp::lt: return a < b;
    case BinaryOp::ge: return a >= b;
    case BinaryOp::le: return a <= b;
    case BinaryOp::eq: return a == b;
    case BinaryOp::ne: return a != b;
  }
  return a;
}

bool is_comparison(BinaryOp op) { return op >= BinaryOp::gt; }

std::uint64_t mix(std::uint64_t seed, std::uint64_t counter) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + counter + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
double unit(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

}  // namespace

void CpuKernels::fill(const TensorView& out, double value) {
  std::array<const std::vector<std::int64_t>*, 1> st{&out.strides};
  for_each_row<1>(out.sizes, st, [&](auto off, std::int64_t n, auto inner) {
    for (std::int64_t i = 0; i < n; ++i) store_double(out.data, out.dtype, off[0] + i * inner[0], value);
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
      store_double(out.data, out.dtype, off[0] + i * inner[0], load_double(in.data, in.dtype, off[1] + i * inner[1]));
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
    case UnaryOp::relu: return unary_loop<T>(out, in, [](T v) { return v > T(0) ? v : T(0); });
    case UnaryOp::positive: return unary_loop<T>(out, in, [](T v) { return v > T(0) ? T(1) : T(0); });
    case UnaryOp::neg: return unary_loop<T>(out, in, [](T v) { return -v; });
    case UnaryOp::square: return unary_loop<T>(out, in, [](T v) { return v * v; });
    case UnaryOp::leaky_relu: return unary_loop<T>(out, in, [a](T v) { return v > T(0) ? v : v * a; });
    default: return unary_loop<T>(out, in, [op, a](T v) { return apply_unary<T>(op, v, a); });
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
    case BinaryOp::add: return binary_loop<T>(out, a, b, [](T x, T y) { return x + y; });
    case BinaryOp::sub: return binary_loop<T>(out, a, b, [](T x, T y) { return x - y; });
    case BinaryOp::mul: return binary_loop<T>(out, a, b, [](T x, T y) { return x * y; });
    case BinaryOp::div: return binary_loop<T>(out, a, b, [](T x, T y) { return x / y; });
    case BinaryOp::maximum: return binary_loop<T>(out, a, b, [](T x, T y) { return x > y ? x : y; });
    default: return binary_loop<T>(out, a, b, [op](T x, T y) { return apply_binary<T>(op, x, y); });
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
    if (is_comparison(op)) {
      auto* o = static_cast<std::uint8_t*>(out.data);
      for_each_row<3>(out.sizes, st, [&](auto off, std::int64_t n, auto in) {
        for (std::int64_t i = 0; i < n; ++i)
          o[off[0] + i * in[0]] = apply_binary<T>(op, pa[off[1] + i * in[1]], pb[off[2] + i * in[2]]) ? 1 : 0;
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
    const std::uint64_t c = offset + static_cast<std::uint64_t>(i);
    double v = 0;
    switch (dist) {
      case Distribution::uniform: v = a + (b - a) * unit(mix(seed, 2 * c)); break;
      case Distribution::normal: {
        const double u1 = 1.0 - unit(mix(seed, 2 * c)), u2 = unit(mix(seed, 2 * c + 1));
        v = a + b * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
        break;
      }
      case Distribution::bernoulli: v = unit(mix(seed, 2 * c)) < a ? 1.0 : 0.0; break;
    }
    values[static_cast<std::size_t>(i)] = v;
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

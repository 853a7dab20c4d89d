// Fill, copy/convert, unary, binary and random kernels: the cpu backend's
// cpu_elementwise.cpp on device memory, one thread per element over the
// coalesced strided walk. Element functions mirror the cpu's template code
// (the same type promotions, NaN behaviour of maximum/minimum, half-to-even
// rounding), and random draws the same counter-based bits.
#include <cstring>
#include <type_traits>

#include "cuda/cuda_common.cuh"

namespace gdrt::cuda {
namespace {

// The float or double overload std:: picks on the cpu (integers go through double).
__device__ __forceinline__ float m_exp(float x) { return expf(x); }
__device__ __forceinline__ double m_exp(double x) { return exp(x); }
__device__ __forceinline__ float m_log(float x) { return logf(x); }
__device__ __forceinline__ double m_log(double x) { return log(x); }
__device__ __forceinline__ float m_log1p(float x) { return log1pf(x); }
__device__ __forceinline__ double m_log1p(double x) { return log1p(x); }
__device__ __forceinline__ float m_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double m_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float m_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double m_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float m_floor(float x) { return floorf(x); }
__device__ __forceinline__ double m_floor(double x) { return floor(x); }
__device__ __forceinline__ float m_rint(float x) { return rintf(x); }
__device__ __forceinline__ double m_rint(double x) { return rint(x); }
__device__ __forceinline__ float m_pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double m_pow(double x, double y) { return pow(x, y); }

template <class T>
using MathType = std::conditional_t<std::is_same_v<T, float>, float, double>;

template <class T>
__device__ __forceinline__ T apply_unary(UnaryOp op, T x, T alpha) {
  using M = MathType<T>;
  const M v = static_cast<M>(x);
  switch (op) {
    case UnaryOp::neg: return static_cast<T>(-x);
    case UnaryOp::exp: return static_cast<T>(m_exp(v));
    case UnaryOp::log: return static_cast<T>(m_log(v));
    case UnaryOp::log1p: return static_cast<T>(m_log1p(v));
    case UnaryOp::abs:
      if constexpr (std::is_floating_point_v<T>) return static_cast<T>(fabs(v));
      else if constexpr (std::is_signed_v<T>) return x < 0 ? static_cast<T>(-x) : x;
      else return x;
    case UnaryOp::sqrt: return static_cast<T>(m_sqrt(v));
    case UnaryOp::rsqrt: return static_cast<T>(M(1) / m_sqrt(v));
    case UnaryOp::square: return static_cast<T>(x * x);
    case UnaryOp::reciprocal: return static_cast<T>(T(1) / x);
    case UnaryOp::relu: return x > T(0) ? x : T(0);
    case UnaryOp::leaky_relu: return x > T(0) ? x : static_cast<T>(x * alpha);
    case UnaryOp::sigmoid: return static_cast<T>(M(1) / (M(1) + m_exp(-v)));
    case UnaryOp::tanh: return static_cast<T>(m_tanh(v));
    case UnaryOp::sign:
      if constexpr (std::is_signed_v<T>) return static_cast<T>((x > T(0)) - (x < T(0)));
      else return static_cast<T>(x > T(0));
    case UnaryOp::floor: return static_cast<T>(m_floor(v));
    case UnaryOp::round: return static_cast<T>(m_rint(v));  // half to even, as nearbyint
    case UnaryOp::positive: return x > T(0) ? T(1) : T(0);
  }
  return x;
}

template <class T>
__device__ __forceinline__ T apply_binary(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::add: return static_cast<T>(a + b);
    case BinaryOp::sub: return static_cast<T>(a - b);
    case BinaryOp::mul: return static_cast<T>(a * b);
    case BinaryOp::div: return static_cast<T>(a / b);
    case BinaryOp::maximum: return a > b ? a : b;  // NaN in b wins, NaN in a loses, as the cpu
    case BinaryOp::minimum: return a < b ? a : b;
    case BinaryOp::pow: return static_cast<T>(m_pow(static_cast<MathType<T>>(a), static_cast<MathType<T>>(b)));
    case BinaryOp::gt: return a > b;
    case BinaryOp::lt: return a < b;
    case BinaryOp::ge: return a >= b;
    case BinaryOp::le: return a <= b;
    case BinaryOp::eq: return a == b;
    case BinaryOp::ne: return a != b;
  }
  return a;
}

// The cpu's counter-based generator (cpu_elementwise.cpp): splitmix64 of
// (seed, counter), 53 bits to a double in [0, 1).
__device__ __forceinline__ std::uint64_t mix(std::uint64_t seed, std::uint64_t counter) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + counter + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
__device__ __forceinline__ double unit(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

// Fill's one value as the bits of its dtype, converted on the host.
std::uint64_t fill_bits(DType dtype, double v) {
  alignas(8) unsigned char bytes[8] = {};
  scalar::store_double(bytes, dtype, 0, v);
  std::uint64_t bits;
  std::memcpy(&bits, bytes, sizeof bits);
  return bits;
}

template <class W>
void fill_typed(const LaunchContext& ctx, const TensorView& out, std::uint64_t bits) {
  W value;
  std::memcpy(&value, &bits, sizeof value);
  auto s = make_strided<1>(out.sizes, {&out.strides}, "fill");
  W* o = static_cast<W*>(out.data);
  for_each_element<1>(ctx, s, [=] __device__(std::int64_t, const std::int64_t(&off)[1]) { o[off[0]] = value; },
                      "gdrt::fill");
}

template <class W>
void copy_same(const LaunchContext& ctx, const TensorView& out, const TensorView& in) {
  auto s = make_strided<2>(out.sizes, {&out.strides, &in.strides}, "copy");
  W* o = static_cast<W*>(out.data);
  const W* x = static_cast<const W*>(in.data);
  if (s.contiguous) {
    GDRT_CUDA_CHECK(cudaMemcpyAsync(o, x, static_cast<std::size_t>(s.numel) * sizeof(W), cudaMemcpyDeviceToDevice,
                                    ctx.stream));
    return;
  }
  for_each_element<2>(ctx, s, [=] __device__(std::int64_t, const std::int64_t(&off)[2]) { o[off[0]] = x[off[1]]; },
                      "gdrt::copy");
}

template <class T>
void unary_typed(const LaunchContext& ctx, UnaryOp op, const TensorView& out, const TensorView& in, T alpha) {
  auto s = make_strided<2>(out.sizes, {&out.strides, &in.strides}, "unary");
  T* o = static_cast<T*>(out.data);
  const T* x = static_cast<const T*>(in.data);
  for_each_element<2>(
      ctx, s,
      [=] __device__(std::int64_t, const std::int64_t(&off)[2]) { o[off[0]] = apply_unary<T>(op, x[off[1]], alpha); },
      "gdrt::unary");
}

template <class T>
void binary_typed(const LaunchContext& ctx, BinaryOp op, const TensorView& out, const TensorView& a,
                  const TensorView& b) {
  auto s = make_strided<3>(out.sizes, {&out.strides, &a.strides, &b.strides}, "binary");
  const T* pa = static_cast<const T*>(a.data);
  const T* pb = static_cast<const T*>(b.data);
  if (op >= BinaryOp::gt) {  // comparisons write bool
    auto* o = static_cast<std::uint8_t*>(out.data);
    for_each_element<3>(
        ctx, s,
        [=] __device__(std::int64_t, const std::int64_t(&off)[3]) {
          o[off[0]] = apply_binary<T>(op, pa[off[1]], pb[off[2]]) ? 1 : 0;
        },
        "gdrt::binary");
    return;
  }
  T* o = static_cast<T*>(out.data);
  for_each_element<3>(
      ctx, s,
      [=] __device__(std::int64_t, const std::int64_t(&off)[3]) {
        o[off[0]] = apply_binary<T>(op, pa[off[1]], pb[off[2]]);
      },
      "gdrt::binary");
}

}  // namespace

void fill(const LaunchContext& ctx, const TensorView& out, double value) {
  const std::uint64_t bits = fill_bits(out.dtype, value);
  switch (itemsize(out.dtype)) {
    case 1: fill_typed<std::uint8_t>(ctx, out, bits); break;
    case 2: fill_typed<std::uint16_t>(ctx, out, bits); break;
    case 4: fill_typed<std::uint32_t>(ctx, out, bits); break;
    default: fill_typed<std::uint64_t>(ctx, out, bits); break;
  }
}

void copy(const LaunchContext& ctx, const TensorView& out, const TensorView& in) {
  if (out.dtype == in.dtype) {
    switch (itemsize(out.dtype)) {
      case 1: copy_same<std::uint8_t>(ctx, out, in); break;
      case 2: copy_same<std::uint16_t>(ctx, out, in); break;
      case 4: copy_same<std::uint32_t>(ctx, out, in); break;
      default: copy_same<std::uint64_t>(ctx, out, in); break;
    }
    return;
  }
  auto s = make_strided<2>(out.sizes, {&out.strides, &in.strides}, "copy");
  void* o = out.data;
  const void* x = in.data;
  const DType od = out.dtype, id = in.dtype;
  for_each_element<2>(
      ctx, s,
      [=] __device__(std::int64_t, const std::int64_t(&off)[2]) {
        scalar::store_double(o, od, off[0], scalar::load_double(x, id, off[1]));
      },
      "gdrt::copy");
}

void unary(const LaunchContext& ctx, UnaryOp op, const TensorView& out, const TensorView& in, double alpha) {
  GDRT_DTYPE_DISPATCH("cuda", in.dtype, T, unary_typed<T>(ctx, op, out, in, static_cast<T>(alpha)));
}

void binary(const LaunchContext& ctx, BinaryOp op, const TensorView& out, const TensorView& a, const TensorView& b) {
  GDRT_DTYPE_DISPATCH("cuda", a.dtype, T, binary_typed<T>(ctx, op, out, a, b));
}

void random(const LaunchContext& ctx, const ops::Random& r) {
  const TensorView& out = r.out;
  auto s = make_strided<1>(out.sizes, {&out.strides}, "random");
  void* o = out.data;
  const DType dtype = out.dtype;
  const Distribution dist = r.dist;
  const std::uint64_t seed = r.seed, offset = r.offset;
  const double a = r.a, b = r.b;
  // Explicit roundings: a contracted multiply-add would change the last bit
  // of uniform draws against the cpu's separate multiply and add. The walk's
  // index is the element's row-major position in out, the cpu's counter.
  for_each_element<1>(
      ctx, s,
      [=] __device__(std::int64_t i, const std::int64_t(&off)[1]) {
        const std::uint64_t c = offset + static_cast<std::uint64_t>(i);
        double v = 0;
        switch (dist) {
          case Distribution::uniform: v = __dadd_rn(a, __dmul_rn(__dsub_rn(b, a), unit(mix(seed, 2 * c)))); break;
          case Distribution::normal: {
            const double u1 = 1.0 - unit(mix(seed, 2 * c)), u2 = unit(mix(seed, 2 * c + 1));
            const double radius = sqrt(__dmul_rn(-2.0, log(u1)));
            const double angle = cos(__dmul_rn(6.283185307179586, u2));
            v = __dadd_rn(a, __dmul_rn(__dmul_rn(b, radius), angle));
            break;
          }
          case Distribution::bernoulli: v = unit(mix(seed, 2 * c)) < a ? 1.0 : 0.0; break;
        }
        scalar::store_double(o, dtype, off[0], v);
      },
      "gdrt::random");
}

}  // namespace gdrt::cuda

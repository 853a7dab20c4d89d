// Elementwise formulas: the unary ops and activations, the binary ops and
// comparisons, and the counter-based random draws. The kernels hoist the
// op switch out of their loops for the hot ops by calling the named
// functions directly; unary()/binary() serve the rest.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "gdrt/kernel_op.h"
#include "ops/host_device.h"

namespace gdrt::scalar {

// What <cmath> computes T in: float for float, double otherwise (its
// integer overloads convert to double; written out, as device code has no
// integer overloads).
template <class T>
using MathType = std::conditional_t<std::is_same_v<T, float>, float, double>;

template <class T>
GDRT_HOST_DEVICE inline T relu(T x) {  // NaN gives 0
  return x > T(0) ? x : T(0);
}
template <class T>
GDRT_HOST_DEVICE inline T positive(T x) {
  return x > T(0) ? T(1) : T(0);
}
template <class T>
GDRT_HOST_DEVICE inline T neg(T x) {
  return static_cast<T>(-x);
}
// Rounded on its own (mul_rn) also where a sum adds it up (batch norm's moments).
template <class T>
GDRT_HOST_DEVICE inline T square(T x) {
  if constexpr (std::is_floating_point_v<T>) return mul_rn(x, x);
  else return static_cast<T>(x * x);
}
template <class T>
GDRT_HOST_DEVICE inline T leaky_relu(T x, T slope) {
  return x > T(0) ? x : static_cast<T>(x * slope);
}

// relu's gradient from its output y: dy where y > 0, else 0. dy is taken
// whether used or not, so a loop over it vectorises into a select.
GDRT_HOST_DEVICE inline float relu_grad(float y, float dy) { return y > 0.0f ? dy : 0.0f; }

template <class T>
GDRT_HOST_DEVICE inline T sign(T x) {
  if constexpr (std::is_signed_v<T>) return static_cast<T>((x > T(0)) - (x < T(0)));
  else return static_cast<T>(x > T(0));  // u8 is never negative
}

// x * sigmoid(x), as one division, the way PyTorch computes it.
template <class T>
GDRT_HOST_DEVICE inline T silu(T x) {
  using M = MathType<T>;
  const M v = static_cast<M>(x);
  return static_cast<T>(v / (M(1) + std::exp(-v)));
}

template <class T>
GDRT_HOST_DEVICE inline T unary(UnaryOp op, T x, T alpha) {
  using M = MathType<T>;
  const M v = static_cast<M>(x);
  switch (op) {
    case UnaryOp::neg: return neg(x);
    case UnaryOp::exp: return static_cast<T>(std::exp(v));
    case UnaryOp::log: return static_cast<T>(std::log(v));
    case UnaryOp::log1p: return static_cast<T>(std::log1p(v));
    case UnaryOp::abs: return static_cast<T>(std::abs(x));
    case UnaryOp::sqrt: return static_cast<T>(std::sqrt(v));
    case UnaryOp::rsqrt: return static_cast<T>(M(1) / std::sqrt(v));
    case UnaryOp::square: return square(x);
    case UnaryOp::reciprocal: return static_cast<T>(T(1) / x);
    case UnaryOp::relu: return relu(x);
    case UnaryOp::leaky_relu: return leaky_relu(x, alpha);
    case UnaryOp::sigmoid: return static_cast<T>(M(1) / (M(1) + std::exp(static_cast<M>(-x))));
    case UnaryOp::tanh: return static_cast<T>(std::tanh(v));
    case UnaryOp::sign: return sign(x);
    case UnaryOp::floor: return static_cast<T>(std::floor(v));
    case UnaryOp::round: return static_cast<T>(std::nearbyint(v));  // half to even, as PyTorch
    case UnaryOp::positive: return positive(x);
    case UnaryOp::silu: return silu(x);
  }
  return x;
}

template <class T>
GDRT_HOST_DEVICE inline T add(T a, T b) {
  return static_cast<T>(a + b);
}
template <class T>
GDRT_HOST_DEVICE inline T sub(T a, T b) {
  return static_cast<T>(a - b);
}
template <class T>
GDRT_HOST_DEVICE inline T mul(T a, T b) {
  return static_cast<T>(a * b);
}
template <class T>
GDRT_HOST_DEVICE inline T div(T a, T b) {
  return static_cast<T>(a / b);
}
// A NaN in b wins, a NaN in a loses.
template <class T>
GDRT_HOST_DEVICE inline T maximum(T a, T b) {
  return a > b ? a : b;
}
template <class T>
GDRT_HOST_DEVICE inline T minimum(T a, T b) {
  return a < b ? a : b;
}

GDRT_HOST_DEVICE inline bool is_comparison(BinaryOp op) { return op >= BinaryOp::gt; }

template <class T>
GDRT_HOST_DEVICE inline bool compare(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::gt: return a > b;
    case BinaryOp::lt: return a < b;
    case BinaryOp::ge: return a >= b;
    case BinaryOp::le: return a <= b;
    case BinaryOp::eq: return a == b;
    case BinaryOp::ne: return a != b;
    default: return false;
  }
}

template <class T>
GDRT_HOST_DEVICE inline T binary(BinaryOp op, T a, T b) {
  using M = MathType<T>;
  switch (op) {
    case BinaryOp::add: return add(a, b);
    case BinaryOp::sub: return sub(a, b);
    case BinaryOp::mul: return mul(a, b);
    case BinaryOp::div: return div(a, b);
    case BinaryOp::maximum: return maximum(a, b);
    case BinaryOp::minimum: return minimum(a, b);
    case BinaryOp::pow: return static_cast<T>(std::pow(static_cast<M>(a), static_cast<M>(b)));
    default: return static_cast<T>(compare(op, a, b));
  }
}

// Counter-based random bits: splitmix64 of (seed, counter).
GDRT_HOST_DEVICE inline std::uint64_t mix(std::uint64_t seed, std::uint64_t counter) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + counter + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// The top 53 bits as a double in [0, 1).
GDRT_HOST_DEVICE inline double unit(std::uint64_t bits) {
  return mul_rn(static_cast<double>(bits >> 11), 0x1.0p-53);
}

// Draw number `counter` of stream `seed`: uniform in [a, b), normal with
// mean a and deviation b (Box-Muller), or bernoulli with probability a.
GDRT_HOST_DEVICE inline double random_draw(Distribution dist, std::uint64_t seed, std::uint64_t counter, double a,
                                           double b) {
  switch (dist) {
    case Distribution::uniform: return a + mul_rn(b - a, unit(mix(seed, 2 * counter)));
    case Distribution::normal: {
      const double u1 = 1.0 - unit(mix(seed, 2 * counter)), u2 = unit(mix(seed, 2 * counter + 1));
      const double radius = std::sqrt(mul_rn(-2.0, std::log(u1)));
      return a + mul_rn(mul_rn(b, radius), std::cos(mul_rn(6.283185307179586, u2)));
    }
    case Distribution::bernoulli: return unit(mix(seed, 2 * counter)) < a ? 1.0 : 0.0;
  }
  return 0;
}

}  // namespace gdrt::scalar

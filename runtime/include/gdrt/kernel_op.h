// Kernel launches as values: one descriptor per op, dispatched through the
// single Backend::launch entry point. A descriptor names every device buffer
// it touches (buffers()), so a backend can translate, check or record them
// without knowing the op, and a new op is one struct here plus one case in
// each backend's dispatch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <variant>
#include <vector>

#include "gdrt/dtype.h"

namespace gdrt {

// A strided window onto device memory handed to kernels. `data` already
// includes the storage offset; strides are in elements.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::f32;
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> strides;
  std::int64_t numel() const;
  bool is_contiguous() const;
  // Bytes from data to one past the last element reached (strides >= 0).
  std::size_t extent_bytes() const;
};

enum class UnaryOp : std::uint8_t {
  neg, exp, log, log1p, abs, sqrt, rsqrt, square, reciprocal,
  relu, leaky_relu, sigmoid, tanh, sign, floor, round, positive /* x > 0 ? 1 : 0 */, silu
};
enum class BinaryOp : std::uint8_t { add, sub, mul, div, maximum, minimum, pow, gt, lt, ge, le, eq, ne };
// The last code of each enumeration: tests walk every code up to it.
inline constexpr UnaryOp kLastUnaryOp = UnaryOp::silu;
inline constexpr BinaryOp kLastBinaryOp = BinaryOp::ne;
enum class ReduceOp : std::uint8_t { sum, max, min, argmax };
enum class Distribution : std::uint8_t { uniform, normal, bernoulli };

// 2-D convolution geometry in NCHW / OIHW layout (groups = 1).
struct ConvGeometry {
  std::int64_t batch, in_channels, in_h, in_w;
  std::int64_t out_channels, kernel_h, kernel_w;
  std::int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  std::int64_t out_h, out_w;
};

struct PoolGeometry {
  std::int64_t batch, channels, in_h, in_w, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, out_h, out_w;
};

// One Adam/AdamW update's scalars; the bias corrections are precomputed.
struct AdamUpdate {
  double beta1, beta2, eps;
  double step_size;              // lr / (1 - beta1^t)
  double bias_correction2_sqrt;  // sqrt(1 - beta2^t)
};

// How a kernel uses one of its buffers.
enum class Access : std::uint8_t { read, write };

// Each op's buffers(f) calls f(pointer&, bytes, access) for every buffer it
// may touch, null ones included (f skips those); pointers are references so
// a backend can rewrite them (emu translates them to its own view).
namespace ops {

struct Fill {
  TensorView out;
  double value;
  template <class F> void buffers(F&& f) { f(out.data, out.extent_bytes(), Access::write); }
};
// Strided copy with dtype conversion (both views on one device, same sizes).
struct Copy {
  TensorView out, in;
  template <class F> void buffers(F&& f) {
    f(in.data, in.extent_bytes(), Access::read);
    f(out.data, out.extent_bytes(), Access::write);
  }
};
struct Unary {
  UnaryOp op;
  TensorView out, in;
  double alpha;
  template <class F> void buffers(F&& f) {
    f(in.data, in.extent_bytes(), Access::read);
    f(out.data, out.extent_bytes(), Access::write);
  }
};
// `a` and `b` are already broadcast to out.sizes (stride 0 on broadcast dims).
struct Binary {
  BinaryOp op;
  TensorView out, a, b;
  template <class F> void buffers(F&& f) {
    f(a.data, a.extent_bytes(), Access::read);
    f(b.data, b.extent_bytes(), Access::read);
    f(out.data, out.extent_bytes(), Access::write);
  }
};
// `out` has in's rank with size 1 on every reduced dimension.
struct Reduce {
  ReduceOp op;
  TensorView out, in;
  template <class F> void buffers(F&& f) {
    f(in.data, in.extent_bytes(), Access::read);
    f(out.data, out.extent_bytes(), Access::write);
  }
};
// Counter-based: element i depends only on (seed, offset + i), so every
// backend draws the same numbers.
struct Random {
  TensorView out;
  Distribution dist;
  std::uint64_t seed, offset;
  double a, b;
  template <class F> void buffers(F&& f) { f(out.data, out.extent_bytes(), Access::write); }
};
// C[b] = op(A[b]) * op(B[b]) for contiguous row-major batches; beta 0 or 1.
struct Matmul {
  DType dtype;
  bool trans_a, trans_b;
  std::int64_t batch, m, n, k;
  const void* a;
  const void* b;
  void* c;
  double beta;
  template <class F> void buffers(F&& f) {
    const auto item = itemsize(dtype);
    f(a, static_cast<std::size_t>(batch * m * k) * item, Access::read);
    f(b, static_cast<std::size_t>(batch * k * n) * item, Access::read);
    f(c, static_cast<std::size_t>(batch * m * n) * item, Access::write);
  }
};

inline std::size_t float_bytes(std::int64_t n) { return static_cast<std::size_t>(n) * sizeof(float); }
inline std::size_t conv_input_bytes(const ConvGeometry& g) {
  return float_bytes(g.batch * g.in_channels * g.in_h * g.in_w);
}
inline std::size_t conv_weight_bytes(const ConvGeometry& g) {
  return float_bytes(g.out_channels * g.in_channels * g.kernel_h * g.kernel_w);
}
inline std::size_t conv_output_bytes(const ConvGeometry& g) {
  return float_bytes(g.batch * g.out_channels * g.out_h * g.out_w);
}

struct Conv2dForward {
  ConvGeometry g;
  const float* x;
  const float* w;
  const float* bias;  // may be null
  float* y;
  template <class F> void buffers(F&& f) {
    f(x, conv_input_bytes(g), Access::read);
    f(w, conv_weight_bytes(g), Access::read);
    f(bias, float_bytes(g.out_channels), Access::read);
    f(y, conv_output_bytes(g), Access::write);
  }
};
struct Conv2dBackwardData {
  ConvGeometry g;
  const float* dy;
  const float* w;
  float* dx;
  template <class F> void buffers(F&& f) {
    f(dy, conv_output_bytes(g), Access::read);
    f(w, conv_weight_bytes(g), Access::read);
    f(dx, conv_input_bytes(g), Access::write);
  }
};
struct Conv2dBackwardWeight {
  ConvGeometry g;
  const float* x;
  const float* dy;
  float* dw;
  float* db;  // may be null
  template <class F> void buffers(F&& f) {
    f(x, conv_input_bytes(g), Access::read);
    f(dy, conv_output_bytes(g), Access::read);
    f(dw, conv_weight_bytes(g), Access::write);
    f(db, float_bytes(g.out_channels), Access::write);
  }
};
// Both gradients of one conv2d in one launch, so a backend can share work
// between them. Any of dx, dw, db may be null; x is read only for dw/db, w
// only for dx.
struct Conv2dBackward {
  ConvGeometry g;
  const float* x;
  const float* dy;
  const float* w;
  float* dx;
  float* dw;
  float* db;
  template <class F> void buffers(F&& f) {
    f(x, conv_input_bytes(g), Access::read);
    f(dy, conv_output_bytes(g), Access::read);
    f(w, conv_weight_bytes(g), Access::read);
    f(dx, conv_input_bytes(g), Access::write);
    f(dw, conv_weight_bytes(g), Access::write);
    f(db, float_bytes(g.out_channels), Access::write);
  }
};

inline std::int64_t pool_inputs(const PoolGeometry& g) { return g.batch * g.channels * g.in_h * g.in_w; }
inline std::int64_t pool_outputs(const PoolGeometry& g) { return g.batch * g.channels * g.out_h * g.out_w; }

struct MaxPool2dForward {
  PoolGeometry g;
  const float* x;
  float* y;
  std::int32_t* argmax;
  template <class F> void buffers(F&& f) {
    f(x, float_bytes(pool_inputs(g)), Access::read);
    f(y, float_bytes(pool_outputs(g)), Access::write);
    f(argmax, static_cast<std::size_t>(pool_outputs(g)) * sizeof(std::int32_t), Access::write);
  }
};
struct MaxPool2dBackward {
  PoolGeometry g;
  const float* dy;
  const std::int32_t* argmax;
  float* dx;
  template <class F> void buffers(F&& f) {
    f(dy, float_bytes(pool_outputs(g)), Access::read);
    f(argmax, static_cast<std::size_t>(pool_outputs(g)) * sizeof(std::int32_t), Access::read);
    f(dx, float_bytes(pool_inputs(g)), Access::write);
  }
};

// Training: batch statistics into save_mean/save_invstd, running stats
// updated in place (unbiased variance), y = (x - mean) * invstd * w + b,
// then max(y, 0) when `relu` (batch norm and relu as one pass).
struct BatchNormTrain {
  std::int64_t n, c, hw;
  const float* x;
  const float* w;
  const float* b;
  float* running_mean;
  float* running_var;
  double momentum, eps;
  float* y;
  float* save_mean;
  float* save_invstd;
  bool relu;
  template <class F> void buffers(F&& f) {
    f(x, float_bytes(n * c * hw), Access::read);
    f(w, float_bytes(c), Access::read);
    f(b, float_bytes(c), Access::read);
    f(running_mean, float_bytes(c), Access::write);
    f(running_var, float_bytes(c), Access::write);
    f(y, float_bytes(n * c * hw), Access::write);
    f(save_mean, float_bytes(c), Access::write);
    f(save_invstd, float_bytes(c), Access::write);
  }
};
struct BatchNormEval {
  std::int64_t n, c, hw;
  const float* x;
  const float* w;
  const float* b;
  const float* running_mean;
  const float* running_var;
  double eps;
  float* y;
  bool relu;
  template <class F> void buffers(F&& f) {
    f(x, float_bytes(n * c * hw), Access::read);
    f(w, float_bytes(c), Access::read);
    f(b, float_bytes(c), Access::read);
    f(running_mean, float_bytes(c), Access::read);
    f(running_var, float_bytes(c), Access::read);
    f(y, float_bytes(n * c * hw), Access::write);
  }
};
// dw/db may be null. `training` selects batch-statistics backward. With
// relu_out (the fused op's output), dy is the gradient after the relu and
// is taken as 0 where relu_out <= 0.
struct BatchNormBackward {
  std::int64_t n, c, hw;
  const float* x;
  const float* dy;
  const float* w;
  const float* mean;
  const float* invstd;
  bool training;
  const float* relu_out;
  float* dx;
  float* dw;
  float* db;
  template <class F> void buffers(F&& f) {
    f(x, float_bytes(n * c * hw), Access::read);
    f(dy, float_bytes(n * c * hw), Access::read);
    f(w, float_bytes(c), Access::read);
    f(mean, float_bytes(c), Access::read);
    f(invstd, float_bytes(c), Access::read);
    f(relu_out, float_bytes(n * c * hw), Access::read);
    f(dx, float_bytes(n * c * hw), Access::write);
    f(dw, float_bytes(c), Access::write);
    f(db, float_bytes(c), Access::write);
  }
};
// dx = y > 0 ? dy : 0 over n contiguous floats (y is relu's output), as
// PyTorch's threshold_backward.
struct ReluBackward {
  std::int64_t n;
  const float* y;
  const float* dy;
  float* dx;
  template <class F> void buffers(F&& f) {
    f(y, float_bytes(n), Access::read);
    f(dy, float_bytes(n), Access::read);
    f(dx, float_bytes(n), Access::write);
  }
};
// One Adam step over n contiguous floats, in place, in PyTorch's order:
// m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= step_size m / (sqrt(v)/bc2_sqrt + eps).
struct AdamStep {
  std::int64_t n;
  float* param;
  const float* grad;
  float* exp_avg;
  float* exp_avg_sq;
  AdamUpdate u;
  template <class F> void buffers(F&& f) {
    f(param, float_bytes(n), Access::write);
    f(grad, float_bytes(n), Access::read);
    f(exp_avg, float_bytes(n), Access::write);
    f(exp_avg_sq, float_bytes(n), Access::write);
  }
};

}  // namespace ops

using KernelOp = std::variant<ops::Fill, ops::Copy, ops::Unary, ops::Binary, ops::Reduce, ops::Random, ops::Matmul,
                              ops::Conv2dForward, ops::Conv2dBackwardData, ops::Conv2dBackwardWeight,
                              ops::Conv2dBackward, ops::MaxPool2dForward, ops::MaxPool2dBackward, ops::BatchNormTrain,
                              ops::BatchNormEval, ops::BatchNormBackward, ops::ReluBackward, ops::AdamStep>;

// The kernel's name in traces ("gdrt::conv2d_forward"), a string literal.
const char* kernel_name(const KernelOp& op);

// Calls f(pointer&, bytes, access) for each non-null buffer of `op`; f
// takes the pointer as `auto*&` and may rewrite it.
template <class F>
void for_each_buffer(KernelOp& op, F&& f) {
  std::visit([&](auto& o) {
    o.buffers([&](auto*& p, std::size_t bytes, Access access) {
      if (p) f(p, bytes, access);
    });
  }, op);
}

// The same for reading only: f gets each pointer by value.
template <class F>
void for_each_buffer(const KernelOp& op, F&& f) {
  // Nothing is written through the non-const path: the lambda copies each pointer.
  for_each_buffer(const_cast<KernelOp&>(op), [&](auto* p, std::size_t bytes, Access access) { f(p, bytes, access); });
}

// For std::visit over a KernelOp with one lambda per op.
template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

}  // namespace gdrt

// The backend seam: one Backend per device kind (cpu now; emu and cuda plug in
// by registering a factory). Memory, copies, streams, events and the op
// kernels all go through it, so each of these has exactly one place where a
// tracing hook belongs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "gdrt/device.h"
#include "gdrt/dtype.h"

namespace gdrt {

// Where the bytes of a copy live, as in cudaMemcpyKind plus pinned-ness.
enum class MemoryKind : std::uint8_t { host_pageable, host_pinned, device };

using StreamId = std::uint64_t;  // 0 is the device's default stream
using EventId = std::uint64_t;

// A strided window onto device memory handed to kernels. `data` already
// includes the storage offset; strides are in elements.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::f32;
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> strides;
  std::int64_t numel() const;
  bool is_contiguous() const;
};

enum class UnaryOp : std::uint8_t {
  neg, exp, log, log1p, abs, sqrt, rsqrt, square, reciprocal,
  relu, leaky_relu, sigmoid, tanh, sign, floor, round, positive /* x > 0 ? 1 : 0 */
};
enum class BinaryOp : std::uint8_t { add, sub, mul, div, maximum, minimum, pow, gt, lt, ge, le, eq, ne };
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

// Op kernels. Pointers are device pointers of the owning backend; float
// kernels take contiguous f32 NCHW data.
// One Adam/AdamW update's scalars; the bias corrections are precomputed.
struct AdamUpdate {
  double beta1, beta2, eps;
  double step_size;           // lr / (1 - beta1^t)
  double bias_correction2_sqrt;  // sqrt(1 - beta2^t)
};

class Kernels {
 public:
  virtual ~Kernels() = default;
  virtual void fill(const TensorView& out, double value) = 0;
  // Strided copy with dtype conversion (both views on this device, same sizes).
  virtual void copy(const TensorView& out, const TensorView& in) = 0;
  virtual void unary(UnaryOp op, const TensorView& out, const TensorView& in, double alpha) = 0;
  // `a` and `b` are already broadcast to out.sizes (stride 0 on broadcast dims).
  virtual void binary(BinaryOp op, const TensorView& out, const TensorView& a, const TensorView& b) = 0;
  // `out` has in's rank with size 1 on every reduced dimension.
  virtual void reduce(ReduceOp op, const TensorView& out, const TensorView& in) = 0;
  // Counter-based: element i of the result depends only on (seed, offset + i),
  // so every backend draws the same numbers.
  virtual void random(const TensorView& out, Distribution dist, std::uint64_t seed, std::uint64_t offset,
                      double a, double b) = 0;
  // C[b] = op(A[b]) * op(B[b]) for contiguous row-major batches; beta 0 or 1.
  virtual void matmul(DType dtype, bool trans_a, bool trans_b, std::int64_t batch, std::int64_t m, std::int64_t n,
                      std::int64_t k, const void* a, const void* b, void* c, double beta) = 0;
  virtual void conv2d_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y) = 0;
  virtual void conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w, float* dx) = 0;
  // db may be null.
  virtual void conv2d_backward_weight(const ConvGeometry& g, const float* x, const float* dy, float* dw,
                                      float* db) = 0;
  // Both gradients of one conv2d in one call, so a backend can share work
  // between them (the output gradient in its preferred layout). Any of
  // dx, dw, db may be null; x is read only for dw/db, w only for dx.
  virtual void conv2d_backward(const ConvGeometry& g, const float* x, const float* dy, const float* w, float* dx,
                               float* dw, float* db) = 0;
  virtual void max_pool2d_forward(const PoolGeometry& g, const float* x, float* y, std::int32_t* argmax) = 0;
  virtual void max_pool2d_backward(const PoolGeometry& g, const float* dy, const std::int32_t* argmax, float* dx) = 0;
  // Training: batch statistics into save_mean/save_invstd, running stats
  // updated in place (unbiased variance), y = (x - mean) * invstd * w + b,
  // then max(y, 0) when `relu` (batch norm and relu as one pass).
  virtual void batch_norm_train(std::int64_t n, std::int64_t c, std::int64_t hw, const float* x, const float* w,
                                const float* b, float* running_mean, float* running_var, double momentum, double eps,
                                float* y, float* save_mean, float* save_invstd, bool relu) = 0;
  virtual void batch_norm_eval(std::int64_t n, std::int64_t c, std::int64_t hw, const float* x, const float* w,
                               const float* b, const float* running_mean, const float* running_var, double eps,
                               float* y, bool relu) = 0;
  // dw/db may be null. `training` selects batch-statistics backward. With
  // relu_out (the fused op's output), dy is the gradient after the relu and
  // is taken as 0 where relu_out <= 0.
  virtual void batch_norm_backward(std::int64_t n, std::int64_t c, std::int64_t hw, const float* x, const float* dy,
                                   const float* w, const float* mean, const float* invstd, bool training,
                                   const float* relu_out, float* dx, float* dw, float* db) = 0;
  // dx = y > 0 ? dy : 0 over n contiguous floats (y is relu's output), the
  // gradient of relu in one pass, as PyTorch's threshold_backward.
  virtual void relu_backward(std::int64_t n, const float* y, const float* dy, float* dx) = 0;
  // One Adam step over n contiguous floats, in place, in PyTorch's order:
  // m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= step_size m / (sqrt(v)/bc2_sqrt + eps).
  virtual void adam_update(std::int64_t n, float* param, const float* grad, float* exp_avg, float* exp_avg_sq,
                           const AdamUpdate& u) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  // Device memory; throws gdrt::Error (rule GD008 on exhaustion).
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* ptr, std::size_t bytes) = 0;
  // Copies `bytes`; ordered on `stream`, synchronous when the backend is.
  virtual void copy(void* dst, MemoryKind dst_kind, const void* src, MemoryKind src_kind, std::size_t bytes,
                    StreamId stream) = 0;
  virtual StreamId create_stream() = 0;
  virtual void destroy_stream(StreamId stream) = 0;
  virtual EventId record_event(StreamId stream) = 0;
  virtual void wait_event(StreamId stream, EventId event) = 0;
  virtual void synchronize_event(EventId event) = 0;
  virtual void synchronize(StreamId stream) = 0;
  virtual void synchronize_device() = 0;
  // True if the host may dereference this backend's memory (cpu only).
  virtual bool host_accessible() const = 0;
  virtual Kernels& kernels() = 0;
};

using BackendFactory = std::function<std::unique_ptr<Backend>(int index)>;

// Registers the factory for a device kind (a backend folder calls this once).
void register_backend(DeviceKind kind, BackendFactory factory);
bool backend_registered(DeviceKind kind);
// The backend serving `device`, created on first use; throws gdrt::Error if
// this build has no backend for the device kind.
Backend& backend(const Device& device);

}  // namespace gdrt

// Internal helpers for elementwise ops: broadcasting and kernel launches.
#pragma once

#include "core/impl.h"

namespace gdrt {

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);
// Kernel view of `t` broadcast to `shape` (stride 0 on new/size-1 dims).
TensorView broadcast_view(const Tensor& t, const Shape& shape);
// out = op(a, b) without autograd; comparisons give bool.
Tensor binary_raw(BinaryOp op, const char* name, const Tensor& a, const Tensor& b);
// out = op(x) without autograd (same dtype as x).
Tensor unary_raw(UnaryOp op, const Tensor& x, double alpha = 0.0);
Tensor scalar_like(const Tensor& t, double value);

}  // namespace gdrt

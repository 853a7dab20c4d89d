// The reductions' rules: floats accumulate in double, integers in int64;
// max/min propagate NaN; argmax answers the first maximum's index in the
// reduced dimensions' row-major order, never a NaN after the first element,
// and 0 when the first element is NaN. A kernel folds elements into
// partials, in increasing index within each, and combines partials of
// disjoint index sets; the cpu folds each output's elements in one pass.
#pragma once

#include <cfloat>
#include <climits>
#include <cstdint>
#include <type_traits>

#include "gdrt/kernel_op.h"
#include "ops/host_device.h"

namespace gdrt::scalar {

template <class T>
using ReduceAcc = std::conditional_t<std::is_floating_point_v<T>, double, std::int64_t>;

template <class A>
GDRT_HOST_DEVICE inline bool is_nan(A v) {
  if constexpr (std::is_floating_point_v<A>) return v != v;
  else return false;
}

template <class A>
GDRT_HOST_DEVICE inline A reduce_init(ReduceOp op) {
  if (op == ReduceOp::sum) return A(0);
  if constexpr (std::is_floating_point_v<A>) return op == ReduceOp::min ? DBL_MAX : -DBL_MAX;
  else return op == ReduceOp::min ? LLONG_MAX : LLONG_MIN;
}

// The accumulator and, for argmax, its element's index (-1: none yet).
template <class A>
struct ReducePartial {
  A value;
  std::int64_t index;
};

template <class A>
GDRT_HOST_DEVICE inline ReducePartial<A> reduce_start(ReduceOp op) {
  return {reduce_init<A>(op), -1};
}

// Folds element `r`, of value v, into p.
template <class A>
GDRT_HOST_DEVICE inline void reduce_fold(ReduceOp op, ReducePartial<A>& p, A v, std::int64_t r) {
  switch (op) {
    case ReduceOp::sum: p.value += v; break;
    case ReduceOp::max: if (v > p.value || is_nan(v)) p.value = v; break;
    case ReduceOp::min: if (v < p.value || is_nan(v)) p.value = v; break;
    case ReduceOp::argmax:
      // Only the very first element may be a NaN answer; other NaNs never win.
      if (is_nan(v) && r != 0) break;
      if (p.index < 0 || v > p.value || (r == 0 && is_nan(v))) p = {v, r};
      break;
  }
}

// The partial of two disjoint index sets' union.
template <class A>
GDRT_HOST_DEVICE inline ReducePartial<A> reduce_combine(ReduceOp op, ReducePartial<A> a, ReducePartial<A> b) {
  switch (op) {
    case ReduceOp::sum: return {a.value + b.value, -1};
    case ReduceOp::max: return (b.value > a.value || is_nan(b.value)) ? b : a;
    case ReduceOp::min: return (b.value < a.value || is_nan(b.value)) ? b : a;
    case ReduceOp::argmax:
      if (a.index < 0) return b;
      if (b.index < 0) return a;
      if (is_nan(a.value)) return a;  // index 0
      if (is_nan(b.value)) return b;
      if (b.value > a.value || (b.value == a.value && b.index < a.index)) return b;
      return a;
  }
  return a;
}

// Writes an output: the index for argmax (0 when nothing was folded), else
// the accumulator in the input's dtype.
template <class T>
GDRT_HOST_DEVICE inline void reduce_store(ReduceOp op, void* out, std::int64_t at, ReducePartial<ReduceAcc<T>> p) {
  if (op == ReduceOp::argmax) static_cast<std::int64_t*>(out)[at] = p.index < 0 ? 0 : p.index;
  else static_cast<T*>(out)[at] = static_cast<T>(p.value);
}

}  // namespace gdrt::scalar

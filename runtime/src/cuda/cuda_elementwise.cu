// Fill, copy/convert, unary, binary and random kernels: the cpu backend's
// cpu_elementwise.cpp on device memory, one thread per element over the
// coalesced strided walk, computing the same formulas
// (ops/scalar_elementwise.h).
#include <cstring>

#include "cuda/cuda_common.cuh"
#include "ops/scalar_elementwise.h"

namespace gdrt::cuda {
namespace {

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
      [=] __device__(std::int64_t, const std::int64_t(&off)[2]) { o[off[0]] = scalar::unary<T>(op, x[off[1]], alpha); },
      "gdrt::unary");
}

template <class T>
void binary_typed(const LaunchContext& ctx, BinaryOp op, const TensorView& out, const TensorView& a,
                  const TensorView& b) {
  auto s = make_strided<3>(out.sizes, {&out.strides, &a.strides, &b.strides}, "binary");
  const T* pa = static_cast<const T*>(a.data);
  const T* pb = static_cast<const T*>(b.data);
  if (scalar::is_comparison(op)) {  // comparisons write bool
    auto* o = static_cast<std::uint8_t*>(out.data);
    for_each_element<3>(
        ctx, s,
        [=] __device__(std::int64_t, const std::int64_t(&off)[3]) {
          o[off[0]] = scalar::compare<T>(op, pa[off[1]], pb[off[2]]) ? 1 : 0;
        },
        "gdrt::binary");
    return;
  }
  T* o = static_cast<T*>(out.data);
  for_each_element<3>(
      ctx, s,
      [=] __device__(std::int64_t, const std::int64_t(&off)[3]) {
        o[off[0]] = scalar::binary<T>(op, pa[off[1]], pb[off[2]]);
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
  // The walk's index is the element's row-major position in out, the cpu's counter.
  for_each_element<1>(
      ctx, s,
      [=] __device__(std::int64_t i, const std::int64_t(&off)[1]) {
        const double v = scalar::random_draw(dist, seed, offset + static_cast<std::uint64_t>(i), a, b);
        scalar::store_double(o, dtype, off[0], v);
      },
      "gdrt::random");
}

}  // namespace gdrt::cuda

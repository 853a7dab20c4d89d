// Device-side helpers shared by the .cu files: strided indexing with the
// views' dimensions coalesced on the host (at most kMaxRank remain), dtype
// loads and stores that convert exactly as the cpu backend's, and the
// grid-stride launch every elementwise kernel uses.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/cuda_kernels.h"
#include "gdrt/error.h"

namespace gdrt::cuda {

constexpr int kMaxRank = 8;
constexpr int kBlock = 256;

// N operands walked over one shape; strides in elements.
template <int N>
struct Strided {
  int rank = 0;
  bool contiguous = true;  // every operand is dense row-major: offset == index
  std::int64_t numel = 1;
  std::int64_t sizes[kMaxRank] = {};
  std::int64_t strides[N][kMaxRank] = {};
};

// Drops size-1 dimensions and merges neighbours every operand walks with one
// stride (a contiguous tensor becomes one dimension), so kernels divide
// once per remaining dimension. Refuses more than kMaxRank dimensions left.
template <int N>
Strided<N> make_strided(const std::vector<std::int64_t>& sizes,
                        const std::array<const std::vector<std::int64_t>*, N>& strides, const char* what) {
  Strided<N> s;
  std::vector<std::int64_t> sz;
  std::array<std::vector<std::int64_t>, N> st;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    s.numel *= sizes[d];
    if (sizes[d] == 1) continue;
    bool merge = !sz.empty();
    for (int k = 0; k < N && merge; ++k) merge = st[k].back() == (*strides[k])[d] * sizes[d];
    if (merge) {
      sz.back() *= sizes[d];
      for (int k = 0; k < N; ++k) st[k].back() = (*strides[k])[d];
    } else {
      sz.push_back(sizes[d]);
      for (int k = 0; k < N; ++k) st[k].push_back((*strides[k])[d]);
    }
  }
  if (sz.size() > static_cast<std::size_t>(kMaxRank))
    throw Error(std::string("cuda ") + what + ": a view with " + std::to_string(sz.size()) +
                " non-mergeable dimensions; the cuda kernels take at most " + std::to_string(kMaxRank));
  s.rank = static_cast<int>(sz.size());
  for (int d = 0; d < s.rank; ++d) {
    s.sizes[d] = sz[static_cast<std::size_t>(d)];
    for (int k = 0; k < N; ++k) s.strides[k][d] = st[static_cast<std::size_t>(k)][static_cast<std::size_t>(d)];
  }
  for (int k = 0; k < N; ++k) s.contiguous = s.contiguous && (s.rank == 0 || (s.rank == 1 && s.strides[k][0] == 1));
  return s;
}

template <int N>
__device__ __forceinline__ void offsets_of(const Strided<N>& s, std::int64_t i, std::int64_t (&off)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    const std::int64_t size = s.sizes[d];
    const std::int64_t idx = i % size;
    i /= size;
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] += idx * s.strides[k][d];
  }
}

template <int N, bool Contiguous, class F>
__global__ void strided_kernel(Strided<N> s, F f) {
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < s.numel; i += step) {
    std::int64_t off[N];
    if constexpr (Contiguous) {
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] = i;
    } else {
      offsets_of(s, i, off);
    }
    f(i, off);
  }
}

inline unsigned grid_for(const LaunchContext& ctx, std::int64_t n, int block = kBlock) {
  const std::int64_t blocks = (n + block - 1) / block;
  const std::int64_t cap = static_cast<std::int64_t>(std::max(ctx.sm_count, 1)) * 32;
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min(blocks, cap)));
}

// f(index, offsets) for every element of the walk, on ctx.stream.
template <int N, class F>
void for_each_element(const LaunchContext& ctx, const Strided<N>& s, F f, const char* kernel) {
  if (s.numel == 0) return;
  if (s.contiguous) strided_kernel<N, true><<<grid_for(ctx, s.numel), kBlock, 0, ctx.stream>>>(s, f);
  else strided_kernel<N, false><<<grid_for(ctx, s.numel), kBlock, 0, ctx.stream>>>(s, f);
  check_launch(kernel);
}

// The cpu's float_to_half and half_to_float (core/dtype.cpp) bit for bit,
// NaN payloads included, so f16 storage is identical across devices.
__device__ __forceinline__ std::uint16_t float_to_half_bits(float value) {
  const std::uint32_t x = __float_as_uint(value);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t exp = (x >> 23) & 0xffu;
  std::uint32_t mant = x & 0x7fffffu;
  if (exp == 0xffu) return static_cast<std::uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 0x1f) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - e;
    std::uint32_t half = mant >> shift;
    const std::uint32_t rest = mant & ((1u << shift) - 1);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = sign | (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
  const std::uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return static_cast<std::uint16_t>(half);
}

__device__ __forceinline__ float half_bits_to_float(std::uint16_t bits) {
  const std::uint32_t sign = (bits & 0x8000u) << 16;
  const std::uint32_t exp = (bits >> 10) & 0x1fu;
  const std::uint32_t mant = bits & 0x3ffu;
  if (exp == 0) {
    const float v = static_cast<float>(mant) * 0x1.0p-24f;  // exact: mant < 2^10
    return sign ? -v : v;
  }
  if (exp == 0x1f) return __uint_as_float(sign | 0x7f800000u | (mant << 13));
  return __uint_as_float(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

// Double to an integer the way x86-64 truncates it (cvttsd2si, then the low
// bits), which is what the cpu backend's static_cast does in practice.
__device__ __forceinline__ std::int64_t truncate_to_i64(double v) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return INT64_MIN;
  return static_cast<std::int64_t>(v);
}
__device__ __forceinline__ std::int32_t truncate_to_i32(double v) {
  if (!(v >= -2147483648.0 && v < 2147483648.0)) return INT32_MIN;
  return static_cast<std::int32_t>(v);
}

__device__ __forceinline__ void store_double(void* base, DType dtype, std::int64_t i, double v) {
  switch (dtype) {
    case DType::f32: static_cast<float*>(base)[i] = static_cast<float>(v); break;
    case DType::f64: static_cast<double*>(base)[i] = v; break;
    case DType::f16: static_cast<std::uint16_t*>(base)[i] = float_to_half_bits(static_cast<float>(v)); break;
    case DType::i32: static_cast<std::int32_t*>(base)[i] = truncate_to_i32(v); break;
    case DType::i64: static_cast<std::int64_t*>(base)[i] = truncate_to_i64(v); break;
    case DType::u8: static_cast<std::uint8_t*>(base)[i] = static_cast<std::uint8_t>(truncate_to_i32(v)); break;
    case DType::boolean: static_cast<std::uint8_t*>(base)[i] = v != 0.0 ? 1 : 0; break;
  }
}

__device__ __forceinline__ double load_double(const void* base, DType dtype, std::int64_t i) {
  switch (dtype) {
    case DType::f32: return static_cast<const float*>(base)[i];
    case DType::f64: return static_cast<const double*>(base)[i];
    case DType::f16: return half_bits_to_float(static_cast<const std::uint16_t*>(base)[i]);
    case DType::i32: return static_cast<const std::int32_t*>(base)[i];
    case DType::i64: return static_cast<double>(static_cast<const std::int64_t*>(base)[i]);
    case DType::u8: return static_cast<const std::uint8_t*>(base)[i];
    case DType::boolean: return static_cast<const std::uint8_t*>(base)[i] ? 1.0 : 0.0;
  }
  return 0;
}

// The computable dtypes, as the cpu's GDRT_CPU_DISPATCH (u8 and bool share uint8_t).
#define GDRT_CUDA_DISPATCH(dtype, T, ...)                                                          \
  switch (dtype) {                                                                                 \
    case DType::f32: { using T = float; __VA_ARGS__; break; }                                      \
    case DType::f64: { using T = double; __VA_ARGS__; break; }                                     \
    case DType::i32: { using T = std::int32_t; __VA_ARGS__; break; }                               \
    case DType::i64: { using T = std::int64_t; __VA_ARGS__; break; }                               \
    case DType::u8: case DType::boolean: { using T = std::uint8_t; __VA_ARGS__; break; }           \
    case DType::f16: throw Error("cuda kernel: float16 is storage-only; convert to float32 first"); \
  }

}  // namespace gdrt::cuda
